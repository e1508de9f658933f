"""The end of a demonstration: a scenario file that replays it live, the oracle's replay
of that file, and the dataset (MedSPOT format and parquet) the replay is appended to.

Targets: the DOM selector (+ text) when the page found one that names exactly the
element and the person kept its box (IoU >= 0.9 with the DOM box); otherwise the
accepted pixel box.

Expected transitions, from what changed during the demonstration:

- a window appeared (`window: ^title$`) or went away (`no_window`);
- browser programs: something appeared in the DOM: the next step's target is then
  visible (`dom_visible` with its selector and text), or for the last step the first
  landmark that appeared; else a landmark that went away (`dom_hidden`); a dialog that
  went away with the last step is added as `dom_hidden`;
- otherwise (and always on pixel programs): the changed region that overlaps the
  accepted box, else the largest changed region (`changed`).

Layout of the dataset folder::

    <Software>_Annotation.json, Images/...   MedSPOT format (clinigym.eval.export.to_medspot)
    collected.parquet                        one row per step (clinigym.eval.export.to_parquet)
    episodes/NNNN-<app>-<id>/                the oracle replays that completed (the export's source)
    failed/NNNN-<app>-<id>/                  replays that did not complete (not exported)
    demonstrations/<app>-<id>/               the person's demonstration: frames, proposals, flags
    scenario-map.yaml                        "<Software>/<index>": scenario file, for `clinigym validate`
"""
from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from clinigym.collect.boxes import contains, iou
from clinigym.collect.errors import ActionError, Conflict
from clinigym.core.actions import STEP_ACTIONS

if TYPE_CHECKING:
    from clinigym.collect.session import CollectedStep, CollectSession

SELECTOR_IOU = 0.9


def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return "-".join(s.split("-")[:6]) or "collected"


def _pixel_box(box) -> list[float]:
    return [round(float(v), 1) if float(v) != int(float(v)) else int(float(v)) for v in box]


def _by_meaning(found, box) -> dict | None:
    """The target by meaning of a proposal whose box is the accepted box: a DOM selector or
    an element of the program's tree."""
    if found is None or box is None or iou(found.box, box) < SELECTOR_IOU:
        return None
    if found.source == "dom" and found.selector:
        return {"selector": found.selector, **({"text": found.text} if found.text else {})}
    if found.source == "element" and found.element:
        return found.element
    return None


def target_of(step: CollectedStep) -> dict:
    for found in step.candidates:
        target = _by_meaning(found, step.box)
        if target is not None:
            return target
    return {"box": _pixel_box(step.box)}


def end_target_of(step: CollectedStep) -> dict:
    return _by_meaning(step.end_proposal, step.end_box) or {"box": _pixel_box(step.end_box)}


def transitions(steps: list[CollectedStep], i: int, dom: bool, targets: list[dict]) -> list[dict]:
    step = steps[i]
    conds: list[dict] = []
    conds += [{"window": f"^{_regex(w)}$"} for w in step.windows_new[:1]]
    conds += [{"no_window": f"^{_regex(w)}$"} for w in step.windows_gone[:1]]
    windows = bool(conds)
    if dom:
        nxt = targets[i + 1] if i + 1 < len(steps) else None
        if step.dom_new and nxt is not None and "selector" in nxt:
            conds.append({"dom_visible": nxt["selector"], **({"text": nxt["text"]} if "text" in nxt else {})})
        elif step.dom_new:
            conds.append({"dom_visible": step.dom_new[0]})
        elif step.dom_gone:
            conds.append({"dom_hidden": step.dom_gone[0]})
        if nxt is None and step.dom_new:
            gone = [s for s in step.dom_gone if s.startswith(".")]   # dialogs, popups
            conds += [{"dom_hidden": s} for s in gone[:1]]
    if not dom or not conds:
        region = _changed_region(step, windows)
        if region is not None or not conds:
            conds.append({"changed": {"box": _pixel_box(region or step.box)}})
    return conds


def _regex(title: str) -> str:
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", title)


def _changed_region(step: CollectedStep, windows: bool) -> list[int] | None:
    """The changed region that tells the action worked. With a window that appeared or
    went away, a change outside the element acted on (the dialog itself changes whatever
    button closes it); otherwise the change at the accepted box, else the largest change."""
    point = step.action.get("point")
    if windows:
        return next((r for r in step.regions if point is None or not contains(r, point, 2)), None)
    return next((r for r in step.regions if iou(r, step.box) > 0), None) or \
        (step.regions[0] if step.regions else None)


def scenario_data(session: CollectSession) -> dict:
    steps = session.steps
    targets = [target_of(s) for s in steps]
    data: dict = {"app": session.app.name, "overview": session.overview.strip()}
    if session.goal.strip():
        data["goal"] = session.goal.strip()
    start = session.start
    if start is not None:
        if start.args:
            data["args"] = list(start.args)
        if start.setup:
            data["setup"] = [s.model_dump(exclude_none=True, mode="json") for s in start.setup]
    out = []
    for i, step in enumerate(steps):
        entry: dict = {"instruction": step.instruction, "action": step.action["type"], "target": targets[i]}
        if step.action["type"] == "drag":
            entry["end_target"] = end_target_of(step)
        if step.action["type"] == "type":
            entry["text"] = step.action["text"]
        trans = transitions(steps, i, session.has_dom, targets)
        entry["transition"] = trans[0] if len(trans) == 1 else trans
        out.append(entry)
    data["steps"] = out
    return data


class _Flow(yaml.SafeDumper):
    pass


def _represent_dict(dumper, data):
    # Targets and conditions (flat mappings) on one line, as in the hand-written scenarios.
    flat = all(not isinstance(v, (dict, list)) or (isinstance(v, list) and all(not isinstance(x, (dict, list))
                                                                              for x in v)) for v in data.values())
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=flat and len(data) <= 3)


def _represent_list(dumper, data):
    flat = all(not isinstance(x, (dict, list)) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat)


_Flow.add_representer(dict, _represent_dict)
_Flow.add_representer(list, _represent_list)


def dump_scenario(data: dict, session: CollectSession, tail: str = "") -> str:
    head = (f"# Collected with `clinigym collect --program {session.app.name}"
            + (f" --scenario {session.start.key}" if session.start else "")
            + f"` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n")
    return head + yaml.dump(data, Dumper=_Flow, sort_keys=False, allow_unicode=True, width=110) + tail


def _check_steps(session: CollectSession) -> None:
    if not session.steps:
        raise Conflict("no steps to save: demonstrate the task first")
    pending = session.pending
    if pending is not None:
        raise Conflict(f"step {pending.index + 1} awaits acceptance: accept it or undo it first")
    if not session.overview.strip():
        raise ActionError("the task overview is empty")
    for s in session.steps:
        if s.action["type"] not in STEP_ACTIONS:
            raise ActionError(f"step {s.index + 1} is a {s.action['type']} action, which scenario steps cannot "
                              f"replay (they are {', '.join(STEP_ACTIONS)}): undo it")
        if not s.instruction:
            raise ActionError(f"step {s.index + 1} has no instruction")


def _unique_path(folder: Path, stem: str) -> Path:
    path, n = folder / f"{stem}.yaml", 2
    while path.exists():
        path, n = folder / f"{stem}-{n}.yaml", n + 1
    return path


def write_scenario(session: CollectSession) -> Path:
    from clinigym.spec.files import SpecError
    from clinigym.spec.scenarios import load_scenario
    _check_steps(session)
    folder = session.scenario_dir
    folder.mkdir(parents=True, exist_ok=True)
    stem = slug(session.scenario_id or session.overview)
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", stem):
        raise ActionError(f"scenario id {stem!r}: use lower-case letters, digits and dashes")
    path = _unique_path(folder, stem)
    path.write_text(dump_scenario(scenario_data(session), session))
    try:
        load_scenario(path)
    except SpecError as exc:
        path.unlink()
        raise ActionError(f"the scenario would not load: {exc}") from None
    return path


def save_demonstration(session: CollectSession, path: Path) -> Path:
    folder = session.dataset / "demonstrations" / f"{session.app.name}-{path.stem}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for step in session.steps:
        for which in ("before", "after"):
            src = session.workdir / f"step-{step.index:03d}-{which}.png"
            if src.exists():
                shutil.copyfile(src, folder / src.name)
    (folder / "demonstration.json").write_text(json.dumps({
        "app": session.app.name, "start": session.start.key if session.start else None,
        "overview": session.overview, "scenario": str(path),
        "screen": [session.width, session.height], "steps": [s.to_json() for s in session.steps]}, indent=2))
    return folder


def replay(session: CollectSession, path: Path) -> tuple[dict, Path]:
    """The oracle on the written scenario (same backend), recorded into the dataset's episodes."""
    from clinigym.envs.steps import StepsEnv
    from clinigym.eval.scoring import score_dirs
    from clinigym.run.runner import agent_for, run_episode
    from clinigym.spec.scenarios import load_scenario

    episodes = session.dataset / "episodes"
    episodes.mkdir(parents=True, exist_ok=True)
    before = set(episodes.iterdir())
    env = StepsEnv(load_scenario(path), backend=session.backend, record_dir=episodes, agent_name="oracle")
    error, session.replayed = None, None
    try:
        run_episode(env, agent_for(env, "oracle"), 0)
        session.replayed = session.read_records()
    except Exception as exc:  # noqa: BLE001 - reported on the page, the program stays up
        error = f"{exc.__class__.__name__}: {exc}"
    finally:
        env.close()
    session._last = None
    new = sorted(set(episodes.iterdir()) - before)
    folder = new[-1] if new else None
    summary = score_dirs([folder])[0] if folder else {}
    steps = []
    if folder:
        from clinigym.recording import read_episode
        ep = read_episode(folder)
        steps = [{"step": r.step, "instruction": r.instruction, "correct": r.correct, "hit": r.hit,
                  "failure": r.failure, "transition_seen": r.transition_seen,
                  "transition_expected": r.transition_expected} for r in ep.steps]
        status = ep.status
    else:
        status = "error"
    result = {"status": status, "tca": summary.get("tca"), "n_steps": len(session.steps), "steps": steps,
              "episode": str(folder) if folder else None, "error": error}
    return result, folder


def export(dataset: Path, parquet: Path) -> dict:
    """Re-export every completed replay in the dataset (the new one appended last)."""
    from clinigym.eval.export import to_medspot, to_parquet
    from clinigym.recording import read_episode

    episodes = dataset / "episodes"
    tasks = to_medspot([episodes], dataset)
    out = to_parquet([episodes], parquet)
    mapping, keys = {}, {}
    for t in tasks:
        name = t.extra["clinigym"]["episode"]
        mapping[t.key] = read_episode(episodes / name).header.scenario_path
        keys[name] = t.key
    (dataset / "scenario-map.yaml").write_text(yaml.safe_dump(mapping, sort_keys=False))
    return {"dataset": str(dataset), "parquet": str(out), "tasks": len(tasks),
            "scenario_map": str(dataset / "scenario-map.yaml"), "episodes": keys}


def _complete(session: CollectSession, path: Path, demonstrated) -> dict:
    """The scenario file completed with its derived checks and declaration, when verified
    (`clinigym.collect.complete`), and the values a family could draw as closing comments."""
    from clinigym.collect.complete import complete
    from clinigym.spec.files import SpecError
    from clinigym.spec.scenarios import load_scenario
    derived, completed = complete(session, scenario_data(session), demonstrated)
    derived["written"] = False
    if completed is not None:
        old = path.read_text()
        tail = "".join(f"# a family could draw: {p['value']!r} ({p['kind']}; in {', '.join(p['where'])})\n"
                       for p in derived["parameters"])
        path.write_text(dump_scenario(completed, session, tail))
        try:
            load_scenario(path)
            derived["written"] = True
        except SpecError as exc:
            path.write_text(old)
            derived["problems"].append(f"the completed scenario would not load: {exc}")
    return derived


def finish(session: CollectSession) -> dict:
    demonstrated = session.read_records()   # before the replay resets the program
    path = write_scenario(session)
    demo = save_demonstration(session, path)
    result, folder = replay(session, path)
    if result["status"] == "complete" and demonstrated is not None and session.replayed is not None:
        result["derived"] = _complete(session, path, demonstrated)
    result.update(scenario=str(path), demonstration=str(demo),
                  flags={s.index: s.flags for s in session.steps if s.flags},
                  scenario_yaml=path.read_text())
    if result["status"] == "complete":
        result["export"] = export(session.dataset, session.parquet)
        result["task"] = result["export"]["episodes"].get(folder.name)
    elif folder is not None:
        failed = session.dataset / "failed"
        failed.mkdir(parents=True, exist_ok=True)
        shutil.move(str(folder), failed / folder.name)
        result["episode"] = str(failed / folder.name)
    return result
