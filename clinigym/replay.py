"""`clinigym replay`: re-run a recorded live episode and check that it reproduces.

The recorded actions are executed again on the live program from a fresh
reset. Per action we compare the live observation before the action with the
recorded `step-NNN-before.png`, and the live outcome (`hit`, `correct`,
`transition_seen`, `failure`) with the recorded one.

Similarity measure (also used by `clinigym validate`):

- `identical`: the fraction of pixels whose three channels are all equal;
- `mad`: the mean absolute difference over all pixels and channels (0-255),
  reported to say *how* different a mismatching frame is;
- a frame matches when `identical >= threshold`, default 0.9999.

Why this measure and this threshold: the programs render deterministically
(fixed fonts, fixture data, dates and window geometry; caret blinking off), so
a faithful replay is bit-identical. We measured exactly 1.0 on every step of
the Orthanc and DICOMscope scenarios over repeated resets. The threshold only
has to absorb what the environment itself treats as noise (its settle rule
ignores changes of fewer than 40 pixels, e.g. a caret) while catching the
smallest real state change we saw: selecting a row in DICOMscope's browser
changes about 2,200 pixels, 0.106 % of a 1920x1080 frame, which the looser
0.999 (2,074 pixels) would only just catch. 0.9999 allows 207 pixels. A mean
difference alone would hide such a small change in the average, which is why
it is reported but not used for the decision.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

if TYPE_CHECKING:   # the live stack is imported only when something runs
    from clinigym.backends import Backend
    from clinigym.scenarios import Scenario

DEFAULT_THRESHOLD = 0.9999
OUTCOME_KEYS = ("hit", "correct", "transition_seen", "failure")


# -- the similarity measure ------------------------------------------------------------
@dataclass(frozen=True)
class Similarity:
    identical: float   # fraction of pixels with all channels equal
    mad: float         # mean absolute difference, 0-255
    differing: int     # number of pixels that differ

    def matches(self, threshold: float = DEFAULT_THRESHOLD) -> bool:
        return self.identical >= threshold


def similarity(a: np.ndarray, b: np.ndarray, ignore: np.ndarray | None = None) -> Similarity:
    """Two RGB images of the same size (H x W x 3, uint8); pixels where the boolean H x W
    mask `ignore` is set are left out of every figure."""
    if a.shape != b.shape:
        raise ValueError(f"images of different sizes: {a.shape} and {b.shape}")
    keep = np.ones(a.shape[:2], bool) if ignore is None else ~ignore
    if not keep.any():
        return Similarity(1.0, 0.0, 0)
    same = np.all(a == b, axis=-1)[keep]
    mad = float(np.abs(a.astype(np.int16) - b.astype(np.int16))[keep].mean())
    return Similarity(float(same.mean()), mad, int(same.size - same.sum()))


def load_rgb(path: Path, size: tuple[int, int] | None = None) -> np.ndarray:
    """A PNG as RGB uint8, resized (bilinear, as the environments do) to `size` = (w, h)."""
    with Image.open(path) as img:
        img = img.convert("RGB")
        if size is not None and img.size != tuple(size):
            img = img.resize(tuple(size), Image.BILINEAR)
        return np.asarray(img, dtype=np.uint8)


# -- the report -----------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    hit: bool | None
    correct: bool | None
    transition_seen: bool | None
    failure: str | None

    @classmethod
    def of(cls, record: dict) -> Outcome:
        return cls(*(record.get(k) for k in OUTCOME_KEYS))

    def describe(self) -> str:
        if self.correct:
            return "correct"
        transition = {True: "transition", False: "no transition", None: "-"}[self.transition_seen]
        return f"{self.failure or 'incorrect'} ({'hit' if self.hit else 'miss'}, {transition})"


@dataclass(frozen=True)
class StepReplay:
    index: int                      # the action's number in the episode (step-NNN files)
    step: int                       # the scenario step it was judged against
    similarity: Similarity | None   # live screen before the action vs the recorded one
    matches: bool
    outcome_same: bool
    recorded: Outcome
    live: Outcome | None            # None: the live episode had already ended
    note: str | None = None


@dataclass
class ReplayReport:
    episode: str
    scenario: str
    threshold: float
    steps: list[StepReplay] = field(default_factory=list)

    @property
    def all_match(self) -> bool:
        return bool(self.steps) and all(s.matches and s.outcome_same for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "all_match": self.all_match}


# -- replay ---------------------------------------------------------------------------
def _scenario(header: dict) -> Scenario:
    from clinigym.scenarios import load_scenario, select
    path = Path(header.get("scenario_path") or "")
    if path.suffix in (".yaml", ".yml") and path.exists():
        return load_scenario(path)
    # Recorded on another checkout: find the scenario by its key.
    found = [s for s in select(header["scenario"]) if s.key == header["scenario"]]
    if not found:
        raise ValueError(f"scenario {header['scenario']!r} of the episode not found")
    return found[0]


def _action(record: dict) -> Any:
    # `action` is the parsed form; when the agent's output did not parse it is null and
    # the raw output is replayed, so that the live environment rejects it the same way.
    return record["action"] if record.get("action") is not None else record.get("raw_action")


def replay_episode(folder: Path, backend: Backend | None = None,
                   threshold: float = DEFAULT_THRESHOLD) -> ReplayReport:
    """Re-execute the episode's actions on its live program from a fresh reset.
    `backend`: a running backend of the episode's program to share (not closed here)."""
    from clinigym.envs.live import LiveEnv
    from clinigym.recording import read_episode

    episode = read_episode(Path(folder))
    header = episode.header
    if header.get("backend") == "static":
        raise ValueError(f"{folder}: a static (keyframe) episode has no live program to replay on")
    scenario = _scenario(header)
    obs_size = tuple(header["coordinates"]["observation_size"])
    # max_actions is not recorded; allowing exactly the recorded actions lets a long
    # recovery-mode episode replay in full and changes nothing else we compare.
    env = LiveEnv(scenario, backend=backend, observation_size=obs_size,
                  recovery=bool(header.get("recovery")), max_actions=len(episode.steps) or None)
    report = ReplayReport(str(episode.folder), scenario.key, threshold)
    try:
        obs, _ = env.reset(seed=header.get("seed"))
        ended = False
        for i, record in enumerate(episode.steps):
            recorded = Outcome.of(record)
            if ended:
                report.steps.append(StepReplay(i, record.get("step", i), None, False, False, recorded, None,
                                               "the live episode had already ended"))
                continue
            expected = load_rgb(episode.folder / record["before"])
            note = None
            if expected.shape != obs["screenshot"].shape:
                sim = None
                note = (f"recorded frame is {expected.shape[1]}x{expected.shape[0]}, "
                        f"live is {obs_size[0]}x{obs_size[1]}")
            else:
                sim = similarity(expected, obs["screenshot"])
            obs, _, terminated, truncated, info = env.step(_action(record))
            live = Outcome.of(info)
            if truncated and info.get("truncated_reason"):
                note = info["truncated_reason"]
            report.steps.append(StepReplay(i, record.get("step", i), sim,
                                           sim is not None and sim.matches(threshold),
                                           live == recorded, recorded, live, note))
            ended = terminated or truncated
    finally:
        env.close()
    return report


# -- command line ---------------------------------------------------------------------
def format_report(report: ReplayReport) -> str:
    verdict = "all match" if report.all_match else "DIFFERS"
    lines = [f"{Path(report.episode).name}  {report.scenario}  {len(report.steps)} actions  {verdict}",
             f"{'action':>6} {'identical':>10} {'MAD':>7}  {'screen':<6}  {'recorded':<40} {'live':<40} outcome"]
    for s in report.steps:
        ident = f"{s.similarity.identical:.6f}" if s.similarity else "-"
        mad = f"{s.similarity.mad:.3f}" if s.similarity else "-"
        live = s.live.describe() if s.live else "-"
        lines.append(f"{s.index:>6} {ident:>10} {mad:>7}  {'match' if s.matches else 'DIFF':<6}  "
                     f"{s.recorded.describe():<40} {live:<40} {'same' if s.outcome_same else 'DIFF'}"
                     + (f"  ({s.note})" if s.note else ""))
    return "\n".join(lines)


def cmd_replay(args) -> int:
    from clinigym.apps import load_app
    from clinigym.backends import KINDS, Backend, make_backend
    from clinigym.recording import episode_folders, read_episode

    folders = [f for d in args.episodes for f in episode_folders(Path(d))]
    if not folders:
        print(f"no recorded episodes under {' '.join(args.episodes)}", file=sys.stderr)
        return 1
    backends: dict[str, Backend] = {}   # one running program per app for all episodes
    reports, failed = [], False
    try:
        for folder in folders:
            try:
                header = read_episode(folder).header
                app = header["app"]
                if app not in backends:   # on the backend kind the episode was recorded on
                    kind = args.backend or (header.get("backend") if header.get("backend") in KINDS else None)
                    backends[app] = make_backend(load_app(app), kind)
                report = replay_episode(folder, backends[app], args.threshold)
            # One broken episode must not hide the others' results.
            except Exception as exc:  # noqa: BLE001
                print(f"error: {folder}: {exc.__class__.__name__}: {exc}", file=sys.stderr)
                failed = True
                continue
            reports.append(report)
            if not args.json:
                print(format_report(report) + "\n")
    finally:
        for backend in backends.values():
            backend.close()
    if args.json:
        print(json.dumps([r.to_json() for r in reports], indent=2))
    return 0 if reports and not failed and all(r.all_match for r in reports) else 1


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "replay", help="re-run recorded live episodes and check that screens and outcomes reproduce",
        description="Re-execute each recorded episode's actions on the live program from a fresh reset; "
                    "per action, compare the live screen before it with the recorded one and the outcome "
                    "with the recorded outcome. Exit 0 when every action matches, 1 otherwise.")
    p.add_argument("episodes", nargs="+", help="episode folders, or run folders holding episodes")
    p.add_argument("--json", action="store_true", help="print the reports as JSON")
    p.add_argument("--backend", choices=("local", "docker"),
                   help="where to run the program (default: the backend the episode was recorded on)")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                   help=f"fraction of identical pixels for a screen to match (default {DEFAULT_THRESHOLD})")
    p.set_defaults(func=cmd_replay)
    return p
