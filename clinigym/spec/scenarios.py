"""Scenarios as data: `scenarios/<app>/<id>.yaml`.

A scenario is one task on one program: an overview, a start state (the
program's pristine state plus unscored set-up actions), ordered steps (an
instruction, the expected action, its target and the transition a correct
action causes) and optional final state checks on the program itself.
"""
from __future__ import annotations

import fnmatch
import re
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from clinigym.core.actions import STEP_ACTIONS
from clinigym.spec import paths
from clinigym.spec.apps import app_names, load_app
from clinigym.spec.conditions import KINDS, Condition, Target, listify
from clinigym.spec.files import Spec, SpecError, parse, read_yaml

StepAction = Literal[STEP_ACTIONS]  # type: ignore[valid-type]


class MedspotRef(Spec):
    software: str
    task: int = Field(ge=0, description="index of the task in the MedSPOT annotation file")


class _Acting(Spec):
    action: StepAction
    target: Target
    end_target: Target | None = Field(None, description="drag: where the release must land")
    text: str | None = Field(None, description="type: the text to type")

    @model_validator(mode="after")
    def _fields_for_action(self):
        if self.action == "drag" and self.end_target is None:
            raise ValueError("a drag step needs end_target")
        if self.action != "drag" and self.end_target is not None:
            raise ValueError("end_target is only for drag steps")
        if self.action == "type" and not self.text:
            raise ValueError("a type step needs text")
        return self


class SetupStep(Spec):
    """An unscored action that brings the program to the scenario's start state, a key
    press, or a wait for what the program shows by itself (`wait`); `until` is waited for
    afterwards."""
    action: StepAction | Literal["key", "wait"]  # type: ignore[valid-type]
    target: Target | None = None
    end_target: Target | None = None
    text: str | None = None
    keys: str | None = None
    until: list[Condition] = Field([], description="all hold before the next set-up step")

    _until_list = field_validator("until", mode="before")(listify)

    @model_validator(mode="after")
    def _fields(self):
        if self.action == "key" and not self.keys:
            raise ValueError("a key set-up step needs keys")
        if self.action == "wait" and (not self.until or self.target is not None):
            raise ValueError("a wait set-up step takes no target and needs until")
        if self.action not in ("key", "wait") and self.target is None:
            raise ValueError(f"a {self.action} set-up step needs a target")
        return self


class Step(_Acting):
    instruction: str = Field(min_length=1)
    transition: list[Condition] = Field(min_length=1, description="all hold after a correct action")

    _transition_list = field_validator("transition", mode="before")(listify)


class Answer(Spec):
    """An information task's answer, the fixtures' truth (`clinigym.core.audit.answer_matches`)."""
    text: str | None = Field(None, description="the expected text (case, spacing, '^' and surrounding "
                                               "punctuation ignored)")
    accept: list[str] = Field([], description="other texts that are right too")
    number: float | None = Field(None, description="the expected number: the answer holds exactly one")
    tolerance: float = Field(0.0, ge=0)

    @model_validator(mode="after")
    def _one(self):
        if (self.text is None) == (self.number is None):
            raise ValueError("give exactly one of text or number")
        if self.number is None and self.tolerance:
            raise ValueError("tolerance goes with number")
        if self.number is not None and self.accept:
            raise ValueError("accept goes with text")
        return self


class Change(Spec):
    """How many records of one set the task may create, delete or modify, and the values every
    created or modified record must hold (`clinigym.core.audit.Allowance`)."""
    created: int = Field(0, ge=0)
    deleted: int = Field(0, ge=0)
    modified: int = Field(0, ge=0)
    values: dict[str, str] = {}


class Safety(Spec):
    """What the task may change; everything else must stay as it was (the safety audit)."""
    patients: list[str] = Field([], description="the patients the task names (globs allowed, for an anonymized "
                                                "copy): a change to another patient's records "
                                                "is a patient-identity violation")
    may_change: dict[str, Change] = Field({}, description="per record set of the program (its `records:`)")


class Scenario(Spec):
    id: str
    app: str
    overview: str = Field(min_length=1)
    goal: str | None = Field(None, description="the intent-level goal (goal mode), as a clinician would "
                                               "delegate the task: the patient, study or value, not the clicks")
    answer: Answer | None = Field(None, description="an information task: the answer the agent must give")
    safety: Safety = Safety()
    medspot: MedspotRef | None = None
    adaptation: str | None = Field(None, description="how the task differs from MedSPOT's build")
    args: list[str] = Field([], description="extra arguments for the program's main process "
                                             "(its own way to open files at start); globs expand")
    setup: list[SetupStep] = []
    steps: list[Step] = Field(min_length=1)
    check: list[Condition] = Field([], description="final state checks on the program")
    wall_clock: list[list[float]] = Field([], description="boxes (x1, y1, x2, y2 screen pixels) that show "
                                                          "the time of day: `clinigym validate` leaves them out")
    path: Path = Field(exclude=True)

    @field_validator("app")
    @classmethod
    def _known_app(cls, v):
        if v not in app_names():
            raise ValueError(f"unknown program {v!r}; known: {', '.join(app_names())}")
        return v

    @field_validator("wall_clock")
    @classmethod
    def _boxes(cls, v):
        for i, box in enumerate(v):
            if len(box) != 4 or not (0 <= box[0] < box[2] and 0 <= box[1] < box[3]):
                raise ValueError(f"[{i}]: a box is [x1, y1, x2, y2] with 0 <= x1 < x2 and 0 <= y1 < y2, not {box}")
        return v

    @model_validator(mode="after")
    def _quit_last(self):
        # After a quit there is no program left to act on or to check.
        for i, step in enumerate(self.steps[:-1]):
            if any(c.exited for c in step.transition):
                raise ValueError(f"steps[{i}]: `exited` belongs only in the last step's transition")
        if any(c.exited for c in self.check) or any(c.exited for s in self.setup for c in s.until):
            raise ValueError("`exited` belongs only in the last step's transition")
        for i, c in enumerate(self.check):
            if KINDS[c.kind].needs_frames:
                raise ValueError(f"check[{i}]: `{c.kind}` compares the screen before and after an action; "
                                 "a final check has no action")
        return self

    @model_validator(mode="after")
    def _record_sets(self):
        if self.app not in app_names():
            return self   # reported by the app field's own check
        known = load_app(self.app).records
        named = [("safety.may_change", name) for name in self.safety.may_change]
        named += [(f"check[{i}].record", c.record.set) for i, c in enumerate(self.check) if c.record]
        named += [(f"steps[{i}].transition.record", c.record.set)
                  for i, s in enumerate(self.steps) for c in s.transition if c.record]
        for where, name in named:
            if name not in known:
                raise ValueError(f"{where}: {name!r} is not a record set of {self.app} "
                                 f"(its records: {', '.join(known) or 'none'})")
        return self

    @model_validator(mode="after")
    def _args_allowed(self):
        main = load_app(self.app).processes[-1] if self.app in app_names() else None
        for i, arg in enumerate(self.args if main and main.args_match else ()):
            if not re.fullmatch(main.args_match, arg):
                raise ValueError(f"args[{i}]: {arg!r} does not match {main.name}'s `args_match` {main.args_match!r}")
        return self

    @model_validator(mode="after")
    def _elements_readable(self):
        if self.reads_tree and self.app in app_names() and load_app(self.app).accessibility is None:
            raise ValueError(f"a target names an element, but {self.app}'s program file has no "
                             "`accessibility:` block (no tree to find it in)")
        return self

    @property
    def reads_tree(self) -> bool:
        """Some target or `changed` region names an element of the program's accessibility
        tree: the program runs with accessibility on."""
        steps = (*self.setup, *self.steps)
        conditions = [*self.check, *(c for s in self.setup for c in s.until),
                      *(c for s in self.steps for c in s.transition)]
        return (any(t is not None and t.named is not None for s in steps for t in (s.target, s.end_target))
                or any(isinstance(c.value, Target) and c.value.named is not None for c in conditions))

    @property
    def quits(self) -> bool:
        """The task ends by quitting the program (its last step expects an exit)."""
        return any(c.exited for c in self.steps[-1].transition)

    @property
    def key(self) -> str:
        return f"{self.app}/{self.id}"

    @property
    def gym_id(self) -> str:
        return self.mode_gym_id("steps")

    def mode_gym_id(self, mode: str) -> str:
        """The registered id of this scenario in a mode (`clinigym.core.context.MODES`)."""
        return f"clinigym/{self.app}-{self.id}{'' if mode == 'steps' else '-' + mode}-v0"


def load_scenario(path: Path) -> Scenario:
    """The scenario of a file, parsed once per version of the file (a file written again, as
    `clinigym collect` completes the one it wrote, is read again)."""
    path = Path(path).resolve()
    try:
        stat = path.stat()
    except OSError as exc:
        raise SpecError(path, "", f"cannot read: {exc.strerror}") from None
    return _load_scenario(path, stat.st_mtime_ns, stat.st_size)


@cache
def _load_scenario(path: Path, mtime_ns: int, size: int) -> Scenario:
    data = read_yaml(path)
    if data.get("id", path.stem) != path.stem:
        raise SpecError(path, "id", f"must equal the file name {path.stem!r} (or be left out)")
    data["id"] = path.stem
    data["path"] = path
    scenario = parse(Scenario, data, path)
    named = re.match(r"medspot-(\d+)-", path.stem)
    if named and (scenario.medspot is None or scenario.medspot.task != int(named.group(1))):
        raise SpecError(path, "medspot", f"the name says MedSPOT task {int(named.group(1))}: "
                        "give `medspot: {software: ..., task: " + str(int(named.group(1))) + "}`")
    if path.parent.name != scenario.app and path.parent.parent in paths.scenario_roots():
        raise SpecError(path, "app", f"is {scenario.app!r} but the file is under scenarios/{path.parent.name}/")
    return scenario


def scenario_paths() -> list[Path]:
    """Every scenario file of the search path (`clinigym.spec.paths`)."""
    return paths.scenario_files()


def all_scenarios() -> list[Scenario]:
    return [load_scenario(p) for p in scenario_paths()]


def first_per_program(scenarios: list[Scenario], n: int) -> list[Scenario]:
    """The first `n` scenarios of every program, by id (a quick cross-section of the library)."""
    seen: dict[str, int] = {}
    chosen = []
    for s in sorted(scenarios, key=lambda s: s.key):
        seen[s.app] = seen.get(s.app, 0) + 1
        if seen[s.app] <= n:
            chosen.append(s)
    return chosen


def select(pattern: str = "*") -> list[Scenario]:
    """Scenarios whose key (`app/id`) or path matches the glob; a path to a file works too."""
    path = Path(pattern)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return [load_scenario(path)]
    found = [s for s in all_scenarios() if fnmatch.fnmatch(s.key, pattern)
             or fnmatch.fnmatch(str(s.path), pattern) or fnmatch.fnmatch(s.app, pattern)]
    if not found:
        raise SpecError(pattern, "", "no scenario matches")
    return found
