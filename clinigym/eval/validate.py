"""`clinigym validate`: how faithful is a static MedSPOT-format dataset to the live program?

For every task mapped to a live scenario, the task's ground-truth actions are
executed on the live program from a fresh reset, and each step is checked:

1. frame: the keyframe against the live screen before the action, with
   `clinigym.eval.replay`'s measure (fraction of identical pixels; threshold
   0.9999 by default, see there). A keyframe of another size is resized to
   the live observation size first (bilinear, as the static environment
   does), and the live frame goes through the same round trip (to the
   keyframe's size and back) so that both have lost the same detail: small
   text would otherwise blur the comparison and the template matching
   (cross-correlation of 0.74 instead of 1.0 for DICOMscope's tree labels at
   1280x720). A keyframe that is a scaled capture of the live screen then
   compares as identical. The scenario's `wall_clock` boxes (where the time
   of the run shows) are left out. When the rest differs, the live screen is
   watched for `WATCH_SECONDS` (longer than a caret's blink, 0.5-0.6 s on or
   off) and the pixels that changed by themselves are left out too (their
   number is reported as `moving`).
2. region: the same measure inside the ground-truth box only.
3. template: where the keyframe's content inside the box is on the live
   screen (normalised cross-correlation over the whole frame, computed with
   FFTs; found when the peak is >= 0.9), and how far that is from the box.
   Content of a uniform box (an empty area) cannot be located and is not
   judged.
4. box: the ground-truth box against the live target the scenario resolves
   on the same screen (distance between their centres). This is what catches
   a shifted annotation on a faithful keyframe: the shifted box crops content
   that is still in the same place on the live screen, so (3) cannot see it.
5. outcome: the ground-truth action (the box centre in live observation
   pixels, the step's action type, a `type` step's text from the scenario)
   on the live program: hit on the live target, expected transition seen
   (the judged record's `transition_seen`), final state check on the last step.

A step with any disagreement is flagged with readable reasons. When a step's
ground-truth action fails live, the scenario's own action is executed so that
the next steps are still checked from the state they expect (the live
environment runs in recovery mode); if that fails too, the remaining steps
are flagged as not reached. Fidelity is the fraction of unflagged steps, per
task, per program and overall.

The scenario map (YAML or JSON) maps MedSPOT task keys `"<Software>/<index>"`
to scenario keys `"<app>/<id>"` (or task family keys, or their files); without one, each
task's `extra["clinigym"]["scenario"]` (written by `clinigym.eval.export.to_medspot`) is
used. Tasks without a scenario are listed as skipped. A task family's task runs on the
instance its `extra["clinigym"]` names (`instance`, `split`: the recording's), re-created
from the family and that seed.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import yaml
from PIL import Image
from tqdm import tqdm

from clinigym.core.geometry import Box
from clinigym.core.recording_schema import StepRecord
from clinigym.eval.similarity import DEFAULT_THRESHOLD, Similarity, load_rgb, pixel_bounds, similarity, wall_clock_mask
from clinigym.eval.templates import TemplateMatch, locate

if TYPE_CHECKING:   # the live stack is imported only when something runs
    from clinigym.envs.steps import StepsEnv
    from clinigym.runtime.backends import Backend
    from clinigym.spec.medspot import MedspotStep, MedspotTask
    from clinigym.spec.scenarios import Scenario, Step
    from clinigym.spec.task_families import Family

DEFAULT_MAX_OFFSET = 5.0    # px; more than rounding between percent and pixel boxes
WATCH_SECONDS = 1.5


def grow(mask: np.ndarray) -> np.ndarray:
    """The mask and its 8 neighbours: a bilinear round trip (`_comparable`) spreads a pixel's
    change by one pixel."""
    padded = np.pad(mask, 1)
    h, w = mask.shape
    return np.logical_or.reduce([padded[dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3)])


def pixel_box(bbox: tuple[float, float, float, float], width: int, height: int) -> Box:
    """An exported box (percent) in whole pixels: back from percent, 385 px is 384.99999..., and
    its centre would round 1 px away from the recording's point (enough to move a tooltip)."""
    return Box(*(round(c) for c in Box.from_percent(*bbox, width, height).as_list()))


def _comparable(keyframe: Path, live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The keyframe at the live size, and the live frame with the same loss of detail."""
    h, w = live.shape[:2]
    with Image.open(keyframe) as img:
        native = img.size
    key = load_rgb(keyframe, (w, h))
    if native != (w, h):
        live = np.asarray(Image.fromarray(live).resize(native, Image.BILINEAR).resize((w, h), Image.BILINEAR))
    return key, live


# -- the report -----------------------------------------------------------------------
@dataclass
class StepCheck:
    step_id: int                      # MedSPOT's step_id
    image: str
    gt_box: list[float] | None = None     # the ground-truth box in live observation pixels
    live_box: list[float] | None = None   # the live target the scenario resolved
    box_offset: float | None = None       # distance between the two boxes' centres, px
    frame: Similarity | None = None
    region: Similarity | None = None
    moving: int | None = None             # pixels left out: they changed by themselves live
    template: TemplateMatch | None = None
    action: dict | None = None
    hit: bool | None = None
    transition_seen: bool | None = None
    correct: bool | None = None
    flags: list[str] = field(default_factory=list)


@dataclass
class TaskCheck:
    task: str          # "<Software>/<index>"
    scenario: str      # "<app>/<id>"
    app: str
    instance: int | None = None   # a task family's instance
    steps: list[StepCheck] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)   # task-level problems

    @property
    def fidelity(self) -> float | None:
        return sum(not s.flags for s in self.steps) / len(self.steps) if self.steps else None


@dataclass
class ValidationReport:
    dataset: str
    threshold: float
    max_offset: float
    tasks: list[TaskCheck] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)   # tasks without a live scenario

    @property
    def flagged(self) -> int:
        return sum(bool(s.flags) for t in self.tasks for s in t.steps) + sum(bool(t.flags) for t in self.tasks)

    def fidelity(self, app: str | None = None) -> float | None:
        steps = [s for t in self.tasks if app in (None, t.app) for s in t.steps]
        return sum(not s.flags for s in steps) / len(steps) if steps else None

    def per_program(self) -> dict[str, float | None]:
        return {app: self.fidelity(app) for app in sorted({t.app for t in self.tasks})}

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for t, raw in zip(self.tasks, data["tasks"]):
            raw["fidelity"] = t.fidelity
        return {**data, "flagged": self.flagged, "fidelity": self.fidelity(),
                "per_program": self.per_program()}


# -- validation -----------------------------------------------------------------------
def load_scenario_map(path: Path) -> dict[str, str]:
    data = yaml.safe_load(Path(path).read_text())   # JSON is YAML too
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError(f"{path}: expected a mapping of \"<Software>/<index>\" to \"<app>/<id>\"")
    return data


def _scenario(key: str) -> Scenario | Family:
    """What a map or an exported task names: a scenario or task family by file or key, or a
    glob that names one scenario."""
    from clinigym.eval.replay import find_task
    from clinigym.spec.scenarios import select
    try:
        return find_task(key, key)
    except ValueError:
        pass
    found = select(key)
    if len(found) != 1:
        raise ValueError(f"{key!r} names {len(found)} scenarios, not one")
    return found[0]


def _check_step(env: StepsEnv, obs: dict, dataset: Path, step: MedspotStep, live_step: Step,
                threshold: float, max_offset: float) -> tuple[StepCheck, dict, StepRecord]:
    """Compare one step before its action, run its ground-truth action; returns the check,
    the next observation and the step's judged record."""
    from clinigym.core import actions as act
    from clinigym.envs import ground_truth
    from clinigym.spec.medspot import image_of

    truth = ground_truth(env)
    live = obs["screenshot"]
    h, w = live.shape[:2]
    gt = step.actions[0]
    box = pixel_box(gt.bbox, w, h)
    check = StepCheck(step.step_id, step.image_path, box.as_list())
    target = truth.target()
    if target is not None:
        check.live_box = target.as_list()
        check.box_offset = math.dist(((box.x1 + box.x2) / 2, (box.y1 + box.y2) / 2),
                                     ((target.x1 + target.x2) / 2, (target.y1 + target.y2) / 2))
    path = image_of(step, dataset)
    if path.exists():
        key, live = _comparable(path, live)
        x1, y1, x2, y2 = pixel_bounds(box, w, h)
        def compare(ignore: np.ndarray) -> tuple[Similarity, Similarity]:
            return (similarity(key, live, ignore),
                    similarity(key[y1:y2, x1:x2], live[y1:y2, x1:x2], ignore[y1:y2, x1:x2]))
        ignore = wall_clock_mask(env.scenario, env.coords)
        check.frame, check.region = compare(ignore)
        if not (check.frame.matches(threshold) and check.region.matches(threshold)):
            # A caret that blinks (or any pixel that changes by itself) is not the keyframe's fault.
            moving = grow(env.moving_pixels(WATCH_SECONDS))
            check.moving = int(moving.sum())
            ignore |= moving
            check.frame, check.region = compare(ignore)
        key = np.where(ignore[..., None], live, key)     # what is left out cannot move the content
        check.template = locate(key[y1:y2, x1:x2], live, (x1, y1))
    # The ground-truth action: MedSPOT gives one box, so a drag's release point and a type
    # step's text come from the live scenario.
    kind = gt.type if gt.type in act.ACTION_TYPES else live_step.action
    oracle = truth.action()
    action = act.Action(kind, box.center, oracle.end_point if kind == "drag" and oracle else None,
                        live_step.text if kind == "type" else None)
    check.action = action.to_json()
    obs, *_ = env.step(action)
    rec = truth.last_record()
    check.hit, check.transition_seen, check.correct = rec.hit, rec.transition_seen, rec.correct

    flags = check.flags
    if not path.exists():
        flags.append(f"keyframe image missing: {step.image_path}")
    if check.frame and not check.frame.matches(threshold):
        flags.append(f"keyframe differs from live screen (similarity {check.frame.identical:.4f})")
    if check.region and not check.region.matches(threshold):
        flags.append(f"target region differs from live screen (similarity {check.region.identical:.4f})")
    if check.template and not check.template.found:
        flags.append(f"target content not found (best match {check.template.score:.2f})")
    elif check.template and check.template.offset > max_offset:
        flags.append(f"target content found {check.template.offset:.0f} px from the box")
    if check.box_offset is not None and check.box_offset > max_offset:
        flags.append(f"ground-truth box {check.box_offset:.0f} px from the live target")
    if check.hit is False and target is not None:
        flags.append("ground-truth point misses the live target")
    if not rec.action_type_ok and kind != live_step.action:
        flags.append(f"action type {kind} differs from the live step's {live_step.action}")
    if rec.invalid_action:
        flags.append(f"ground-truth action invalid live: {rec.invalid_action}")
    if check.transition_seen is not True:
        flags.append("no transition after the ground-truth action")
    if rec.final_check is False:
        flags.append("final state check failed")
    if rec.truncated_reason:
        flags.append(f"live program stopped: {rec.truncated_reason}")
    return check, obs, rec


def validate_task(dataset: Path, task: MedspotTask, scenario: Scenario | Family, backend: Backend | None = None,
                  threshold: float = DEFAULT_THRESHOLD, max_offset: float = DEFAULT_MAX_OFFSET) -> TaskCheck:
    """Validate one task on its live program; a task family's on the instance the task names."""
    from clinigym.envs import ground_truth
    from clinigym.envs.steps import StepsEnv
    from clinigym.eval.replay import episode_start

    given = task.extra.get("clinigym") or {}
    seed, split = episode_start(scenario, 0, given.get("instance"), given.get("split"))
    # Recovery mode: a failed ground-truth action does not end the episode, so the scenario's
    # own action can bring the program to the state the next step expects.
    env = StepsEnv(scenario, backend=backend, recovery=True, split=split)
    result = TaskCheck(task.key, scenario.key, scenario.app, seed if env.family else None)
    try:
        obs, _ = env.reset(seed=seed)
        live = env.scenario   # a family's: this instance's
        steps = [s for s in task.steps if s.scorable]
        if len(steps) != len(live.steps):
            result.flags.append(f"{len(steps)} scorable steps, the scenario has {len(live.steps)}")
        stopped: str | None = None
        for i, step in enumerate(steps):
            if stopped is None and i >= len(live.steps):
                stopped = "no live step for it"
            if stopped:
                result.steps.append(StepCheck(step.step_id, step.image_path, flags=[f"not reached: {stopped}"]))
                continue
            check, obs, rec = _check_step(env, obs, Path(dataset), step, live.steps[i], threshold, max_offset)
            result.steps.append(check)
            if rec.truncated_reason:
                stopped = f"the live program stopped ({rec.truncated_reason})"
            elif not check.correct and i + 1 < min(len(steps), len(live.steps)):
                obs, reward, _, truncated, _ = env.step(ground_truth(env).action())
                if not reward or truncated:
                    stopped = (f"step {step.step_id} failed live and the scenario's own action "
                               "did not recover the program")
    finally:
        env.close()
    return result


def validate_dataset(dataset: Path, scenario_map: dict[str, str] | None = None,
                     backends: Callable[[str], Backend] | Mapping[str, Backend] | None = None,
                     threshold: float = DEFAULT_THRESHOLD,
                     max_offset: float = DEFAULT_MAX_OFFSET, progress: bool = False) -> ValidationReport:
    """Validate every mapped task of the dataset on its live program. `backends`: running
    programs to share, as a mapping or a function of the app name (they are not closed);
    without it, one backend per program (default kind) is started and closed here.
    `progress`: a progress bar of the tasks on stderr."""
    from clinigym.runtime.backends import make_backend
    from clinigym.spec.apps import load_app
    from clinigym.spec.medspot import read_dataset

    dataset = Path(dataset)
    tasks = read_dataset(dataset)
    if scenario_map is not None:
        unknown = sorted(set(scenario_map) - {t.key for t in tasks})
        if unknown:
            raise ValueError(f"the scenario map names tasks not in {dataset}: {', '.join(unknown)}")
        keys = {t.key: scenario_map.get(t.key) for t in tasks}
    else:
        keys = {t.key: (t.extra.get("clinigym") or {}).get("scenario") for t in tasks}
    report = ValidationReport(str(dataset), threshold, max_offset,
                              skipped=[t.key for t in tasks if not keys[t.key]])
    own: dict[str, Backend] = {}

    def backend_for(app: str):
        if backends is None:
            if app not in own:
                own[app] = make_backend(load_app(app))
            return own[app]
        return backends(app) if callable(backends) else backends[app]

    try:
        for task in tqdm([t for t in tasks if keys[t.key]], desc="validate", unit="task", disable=not progress):
            scenario = _scenario(keys[task.key])
            try:
                report.tasks.append(validate_task(dataset, task, scenario, backend_for(scenario.app),
                                                  threshold, max_offset))
            # A program that cannot start must not hide the other tasks' results.
            except Exception as exc:  # noqa: BLE001
                report.tasks.append(TaskCheck(task.key, scenario.key, scenario.app,
                                              flags=[f"live run failed: {exc.__class__.__name__}: {exc}"]))
    finally:
        for backend in own.values():
            backend.close()
    return report


# -- the table -------------------------------------------------------------------
def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _step_row(s: StepCheck) -> str:
    def sim(v: Similarity | None) -> str:
        return "-" if v is None else f"{v.identical:.4f}"
    content = "-" if s.template is None else (f"{s.template.offset:.0f} px" if s.template.found else "absent")
    box = "-" if s.box_offset is None else f"{s.box_offset:.0f} px"
    transition = {True: "yes", False: "no", None: "-"}[s.transition_seen]
    moving = "-" if s.moving is None else str(s.moving)
    return (f"{s.step_id:>4} {sim(s.frame):>7} {sim(s.region):>7} {moving:>6} {content:>10} {box:>7} "
            f"{transition:>10}")


def format_report(report: ValidationReport) -> str:
    lines = [(f"{'task':<16} {'scenario':<30} {'step':>4} {'frame':>7} {'region':>7} {'moving':>6} "
              f"{'content':>10} {'box':>7} {'transition':>10}")]
    for t in report.tasks:
        lines += [f"{t.task:<16} {t.scenario:<30}    ! {flag}" for flag in t.flags]
        for s in t.steps:
            lines.append(f"{t.task:<16} {t.scenario:<30} {_step_row(s)}")
            lines += [f"{'':<52}! {flag}" for flag in s.flags]
    lines += ["", "fidelity (steps without a flag):"]
    lines += [f"  task    {t.task:<16} {t.scenario:<30} {_pct(t.fidelity):>7}"
              + ("" if t.instance is None else f"   (instance {t.instance})") for t in report.tasks]
    lines += [f"  program {app:<47} {_pct(v):>7}" for app, v in report.per_program().items()]
    lines.append(f"  overall {'':<47} {_pct(report.fidelity()):>7}   ({report.flagged} flagged)")
    if report.skipped:
        lines.append(f"skipped (no live scenario): {', '.join(report.skipped)}")
    return "\n".join(lines)
