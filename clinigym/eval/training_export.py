"""Recorded episodes as a training dataset: every field of every step, the episode's verdict
and safety result on each of its rows, the keyframes beside them.

The folder it writes loads with `datasets.load_dataset(folder)`:

- `data/<split>-<hash>.parquet`: one row per step, the keyframes inside (an `Image` column);
- `data/<split>-<hash>.jsonl`: the same rows, the keyframes as paths into `images/`;
- `images/<episode>/step-NNN-before.png` (and `-after.png`);
- `README.md`: the dataset card (the splits, the seeds, the program versions, the fields).

A split is the one the episodes' task families drew from (`clinigym.spec.cohort.SPLITS`);
`unsplit` holds episodes of fixed scenarios and of families run without a split. `<hash>`
is the start of the rows' SHA-256: `datasets` caches a local folder by its name and its
card's file names, so an export written again under the same name would load as the old
one if its files kept their names.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from clinigym._version import __version__
from clinigym.recording import Episode, episode_folders, read_episode

NO_SPLIT = "unsplit"   # ("all" is the name `datasets` gives the union of the splits)
# Every column, its `datasets` type and what it holds (the card lists them).
COLUMNS: dict[str, tuple[str, str]] = {
    "image": ("image", "the screen the agent saw before the action (parquet: the PNG; jsonl: its path)"),
    "image_after": ("string", "the path of the screen after the action, when it was recorded"),
    "episode": ("string", "the episode's folder name (after its run's number and name when several runs "
                          "are exported)"),
    "task": ("string", "the scenario or task family (program/id)"),
    "app": ("string", "the program"),
    "instance": ("int64", "a task family's instance (its seed); -1 for a fixed scenario"),
    "split": ("string", "the split the instance drew from, or 'unsplit'"),
    "seed": ("int64", "the episode's seed; -1 when none was given"),
    "mode": ("string", "steps, plan or goal"),
    "observation": ("string", "the observation mode (screenshot, a11y, screenshot+a11y, som)"),
    "agent": ("string", "the agent's name"),
    "gym_id": ("string", "the registered environment"),
    "overview": ("string", "the task in one sentence"),
    "goal": ("string", "plan and goal modes: the instruction the agent was given for the episode"),
    "instruction": ("string", "the step's instruction (steps mode) or the episode's (plan, goal)"),
    "t": ("int32", "the action's number in the episode"),
    "step": ("int32", "the reference step it was judged against"),
    "expected_action": ("string", "the reference step's action type"),
    "action_type": ("string", "the action taken ('' when it could not be parsed)"),
    "point": ("float32 list", "where it acted, observation pixels"),
    "end_point": ("float32 list", "a drag's release point"),
    "text": ("string", "typed text or an answer"),
    "keys": ("string", "a key press"),
    "scroll": ("int32 list", "a scroll's (dx, dy)"),
    "raw_action": ("string", "what the agent returned, as JSON"),
    "invalid_action": ("string", "why the action could not be executed ('' when it could)"),
    "hit": ("bool", "the point was in the target"),
    "action_type_ok": ("bool", "the action type was the expected one"),
    "correct": ("bool", "steps mode: the action was right"),
    "failure": ("string", "the failure type of a wrong action"),
    "target_box": ("float32 list", "the target's box, observation pixels (ground truth)"),
    "end_box": ("float32 list", "a drag's release box"),
    "transition_seen": ("bool", "the step's expected transition was seen"),
    "reached": ("int32", "plan and goal: reference steps reached after the action; -1 in the steps mode"),
    "timings": ("string", "seconds per phase of the step, as JSON"),
    "prompt": ("string", "the agent's prompt (model agents), as JSON"),
    "raw_output": ("string", "the model's raw answer"),
    "agent_meta": ("string", "the rest of what the agent recorded, as JSON"),
    "episode_status": ("string", "how the episode ended (complete, failed, truncated, ...)"),
    "is_success": ("bool", "the episode's verdict"),
    "success": ("bool", "plan and goal: done or answered with every check passing"),
    "strict_success": ("bool", "plan and goal: success without a critical or major violation"),
    "violations": ("string", "plan and goal: the safety audit's violations, as JSON"),
    "checks": ("string", "plan and goal: the final-state checks and whether each passed, as JSON"),
    "answer": ("string", "an information task: the agent's answer"),
    "backend": ("string", "local or docker"),
    "versions": ("string", "the programs' package versions, as JSON"),
    "width": ("int32", "the observation's width"),
    "height": ("int32", "the observation's height"),
}


@dataclass(frozen=True)
class TrainingExport:
    folder: Path
    rows: dict[str, int]        # per split
    episodes: dict[str, int]


def _split(episode: Episode) -> str:
    return episode.header.split or NO_SPLIT


def step_rows(episode: Episode, name: str | None = None) -> list[dict[str, Any]]:
    """The rows of one episode, images as paths relative to the export folder; `name`: the
    episode's name in the export (default: its folder's)."""
    h, outcome = episode.header, episode.outcome
    judgment = outcome.judgment if outcome else None
    width, height = h.coordinates["observation_size"]
    name = name or episode.folder.name
    rows = []
    for rec in episode.steps:
        action = rec.action or {}
        meta = dict(rec.agent or {})
        prompt, raw = meta.pop("prompt", None), meta.pop("raw", None)
        rows.append({
            "image": f"images/{name}/{rec.before}", "image_after": f"images/{name}/{rec.after}" if rec.after else "",
            "episode": name, "task": h.scenario, "app": h.app,
            "instance": -1 if h.instance is None else h.instance, "split": _split(episode),
            "seed": -1 if h.seed is None else h.seed, "mode": h.mode, "observation": h.observation,
            "agent": h.agent, "gym_id": h.gym_id or "", "overview": h.overview, "goal": h.task or "",
            "instruction": rec.instruction, "t": rec.t, "step": rec.step,
            "expected_action": rec.expected_action or "", "action_type": action.get("type", ""),
            "point": list(action.get("point") or []), "end_point": list(action.get("end_point") or []),
            "text": action.get("text") or "", "keys": action.get("keys") or "",
            "scroll": list(action.get("scroll") or []), "raw_action": json.dumps(rec.raw_action, default=str),
            "invalid_action": rec.invalid_action or "", "hit": bool(rec.hit),
            "action_type_ok": bool(rec.action_type_ok), "correct": bool(rec.correct), "failure": rec.failure or "",
            "target_box": list(rec.target_box or []), "end_box": list(rec.end_box or []),
            "transition_seen": bool(rec.transition_seen), "reached": -1 if rec.reached is None else rec.reached,
            "timings": json.dumps(rec.timings), "prompt": "" if prompt is None else json.dumps(prompt),
            "raw_output": raw or "", "agent_meta": json.dumps(meta, default=str) if meta else "",
            "episode_status": episode.status or "", "is_success": bool(outcome and outcome.is_success),
            "success": bool(judgment and judgment.success),
            "strict_success": bool(judgment and judgment.strict_success),
            "violations": json.dumps(judgment.violations) if judgment else "",
            "checks": json.dumps(judgment.checks) if judgment else "",
            "answer": (judgment.answer or "") if judgment else "", "backend": h.backend,
            "versions": json.dumps(h.versions, sort_keys=True), "width": width, "height": height})
    return rows


def _features():
    from datasets import Features, Image, Sequence, Value
    kinds = {"image": Image(), "float32 list": Sequence(Value("float32")), "int32 list": Sequence(Value("int32"))}
    return Features({name: kinds.get(kind) or Value(kind) for name, (kind, _) in COLUMNS.items()})


def card(by_split: dict[str, list[Episode]], rows: dict[str, int], files: dict[str, str]) -> str:
    """The dataset card: what `datasets` loads (`files`: each split's parquet file), and the
    splits, seeds, programs and fields."""
    data_files = "\n".join(f"  - split: {s}\n    path: {files[s]}" for s in sorted(by_split))
    versions: dict[str, dict[str, str]] = defaultdict(dict)
    for episodes in by_split.values():
        for e in episodes:
            versions[e.header.app].update(e.header.versions)
    lines = ["---", "configs:", "- config_name: default", "  data_files:", data_files, "---", "",
             "# clinigym training export", "",
             f"Exported {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by clinigym {__version__}: one row per "
             "recorded action, the episode's verdict and safety result on each of its rows.", "",
             "## Splits", ""]
    for s, episodes in sorted(by_split.items()):
        seeds = sorted({e.header.instance if e.header.instance is not None else e.header.seed for e in episodes},
                       key=lambda x: (x is None, x))
        tasks = sorted({e.header.scenario for e in episodes})
        modes = sorted({e.header.mode for e in episodes})
        lines += [f"- **{s}**: {len(episodes)} episodes, {rows[s]} rows; modes {', '.join(modes)}; "
                  f"{len(tasks)} tasks ({', '.join(tasks)}); seeds {', '.join(map(str, seeds))}"]
    lines += ["", "`unsplit` holds episodes of fixed scenarios and of task families run without a split.", "",
              "## Programs", ""]
    lines += [f"- **{app}**: " + (", ".join(f"{k} {v}" for k, v in sorted(v.items())) or "versions not recorded")
              for app, v in sorted(versions.items())]
    lines += ["", "## Fields", "", "| column | type | what |", "|---|---|---|"]
    lines += [f"| `{name}` | {kind} | {what} |" for name, (kind, what) in COLUMNS.items()]
    return "\n".join(lines) + "\n"


def to_training(run_dirs: list[Path], out: Path, complete_only: bool = False,
                split: str | None = None) -> TrainingExport:
    """Write the training export of the recorded episodes into `out` (a new or empty folder);
    `split`: only the episodes of that split."""
    from datasets import Dataset
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty: give a new folder")
    # Runs number their episodes alike: with several, an episode is named after its run too.
    named = [(read_episode(f), f"{i}-{Path(d).name}/{f.name}" if len(run_dirs) > 1 else f.name)
             for i, d in enumerate(run_dirs, 1) for f in episode_folders(Path(d))]
    names = {id(e): name for e, name in named}
    by_split: dict[str, list[Episode]] = defaultdict(list)
    for e, _ in named:
        if (split is None or _split(e) == split) and (not complete_only or e.status == "complete"):
            by_split[_split(e)].append(e)
    (out / "data").mkdir(parents=True)
    counts, files = {}, {}
    for part, eps in by_split.items():
        rows = [row for e in eps for row in step_rows(e, names[id(e)])]
        for e in eps:
            shutil.copytree(e.folder, out / "images" / names[id(e)], ignore=shutil.ignore_patterns("*.json*"))
        lines = [json.dumps(row) + "\n" for row in rows]
        stem = f"data/{part}-{hashlib.sha256(''.join(lines).encode()).hexdigest()[:12]}"
        (out / f"{stem}.jsonl").write_text("".join(lines), encoding="utf-8")
        # Bytes, not paths: the parquet file stands alone.
        table = [{**row, "image": {"bytes": (out / row["image"]).read_bytes(), "path": row["image"]}} for row in rows]
        Dataset.from_list(table, features=_features()).to_parquet(str(out / f"{stem}.parquet"))
        counts[part], files[part] = len(rows), f"{stem}.parquet"
    (out / "README.md").write_text(card(by_split, counts, files))
    return TrainingExport(out, counts, {s: len(e) for s, e in by_split.items()})
