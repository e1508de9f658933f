"""The recording schema: one typed step record and one episode header, produced by the
environments and read back by every reader (scoring, report, export, replay, validate,
collect, review).

These records hold the judged ground truth (target boxes, expected actions, failure
types): they go to the recording, never to an agent. `to_json`/`from_json` convert them
to the files' JSON; fields this version does not know are kept in `extra` and written
back, and format 1 (before the records were typed) reads unchanged.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeVar

from clinigym.core import audit
from clinigym.core.errors import DataError

FORMAT = 2
# "error": ended by an infrastructure fault the agent did not cause (its model server stopped
# answering): excluded from every metric, counted apart (`clinigym.eval.scoring`).
STATUSES = ("complete", "failed", "truncated", "abandoned", "error")

R = TypeVar("R", bound="_Record")


class _Record:
    """JSON conversion shared by the records: known fields by name, the rest in `extra`."""
    extra: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]  # every record is a dataclass
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            out[f.name] = value.to_json() if isinstance(value, _Record) else value
        return {**self.extra, **out}

    @classmethod
    def from_json(cls: type[R], data: dict[str, Any], where: str = "") -> R:
        if not isinstance(data, dict):
            raise DataError(f"{where or cls.__name__}: expected a JSON object, found {type(data).__name__}")
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}  # type: ignore[arg-type]
        missing = [f.name for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                   if f.name in names and f.name not in data
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise DataError(f"{where or cls.__name__}: missing {', '.join(missing)}")
        known = {k: v for k, v in data.items() if k in names}
        extra = {k: v for k, v in data.items() if k not in names}
        return cls(**cls._convert(known), extra=extra)  # type: ignore[call-arg]  # every record is a dataclass

    @classmethod
    def _convert(cls, known: dict[str, Any]) -> dict[str, Any]:
        return known


@dataclass
class StepRecord(_Record):
    """One action of an episode, as judged."""
    step: int                                   # the scenario step it was judged against
    instruction: str
    expected_action: str | None                 # the step's action type
    raw_action: Any                             # what the agent returned
    action: dict[str, Any] | None               # the parsed action (Action.to_json), None if invalid
    invalid_action: str | None = None
    hit: bool = False
    action_type_ok: bool = False
    correct: bool = False
    failure: str | None = None                  # PROTOCOL.md's type or a live outcome
    target_box: list[float] | None = None       # observation pixels
    end_box: list[float] | None = None
    target_size: str | None = None
    transition_expected: list[str] = field(default_factory=list)
    transition_seen: bool | None = None
    final_check: bool | None = None
    settled: bool | None = None
    settle_time: float | None = None
    timings: dict[str, float] = field(default_factory=dict)
    truncated_reason: str | None = None
    agent: dict[str, Any] | None = None         # what the agent asked to record (Action.meta)
    medspot_step_id: int | None = None          # static mode: MedSPOT's step id
    reached: int | None = None                  # plan/goal: reference steps reached after this action
    t: int = 0                                  # the action's number in the episode (file names)
    before: str = ""                            # step-NNN-before.png
    after: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class GoalJudgment(_Record):
    """How a plan or goal episode ended, judged on the program's own state after it
    (docs/goal-mode.md): the final-state checks, the answer, the reference path, the audit."""
    ending: str | None                          # done, fail, answer; None: budget spent or program stopped
    checks: list[dict[str, Any]]                # {"check": description, "passed": bool}
    success: bool                               # ended by done() or answer(), checks pass, answer right
    answer: str | None = None
    answer_ok: bool | None = None               # None: not an information task
    reference_steps: int = 0
    reached: int = 0                            # reference steps whose transition was reached, in order
    first_deviation: int | None = None          # the first action off the reference path; None: none
    actions: int = 0
    budget: int = 0
    violations: list[dict[str, str]] = field(default_factory=list)   # audit.Violation.to_json()
    requests: list[dict[str, str]] = field(default_factory=list)     # browser programs: method, url
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def completion(self) -> float:
        """The share of the final-state checks that pass, the answer of an information task
        counted as one more. A recording with no check at all (made before the path check of
        tasks that leave no state) is complete when it succeeded."""
        passed = [bool(c["passed"]) for c in self.checks] + ([] if self.answer_ok is None else [self.answer_ok])
        return sum(passed) / len(passed) if passed else float(self.success)

    @property
    def progress(self) -> float:
        return self.reached / self.reference_steps if self.reference_steps else 0.0

    @property
    def strict_success(self) -> bool:
        """Success without a critical or major violation of the safety audit."""
        return self.success and not audit.blocks_strict(self.violations)

    @property
    def false_done(self) -> bool:
        """Completion claimed (done or answer) while a final-state check fails."""
        return self.ending in ("done", "answer") and not all(c["passed"] for c in self.checks)


@dataclass
class EpisodeOutcome(_Record):
    status: str                                 # one of STATUSES
    steps_correct: int = 0
    actions: int = 0
    reason: str | None = None
    judgment: GoalJudgment | None = None        # plan and goal modes
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_success(self) -> bool:
        """The episode's verdict: plan/goal, the strict success of its judgment; steps, the
        task completed."""
        return self.judgment.strict_success if self.judgment is not None else self.status == "complete"

    @classmethod
    def _convert(cls, known: dict[str, Any]) -> dict[str, Any]:
        if isinstance(known.get("judgment"), dict):
            known = {**known, "judgment": GoalJudgment.from_json(known["judgment"], "judgment")}
        return known


@dataclass
class EpisodeHeader(_Record):
    """What an episode ran: scenario, program, agent, sizes; its outcome once it ended."""
    scenario: str                               # app/id, or medspot:<Software>/<index>
    app: str
    overview: str
    n_steps: int                                # scored steps
    coordinates: dict[str, Any]
    steps: list[dict[str, Any]] = field(default_factory=list)   # each step's instruction and action
    agent: str = "unknown"
    seed: int | None = None
    backend: str = "?"
    mode: str = "steps"
    observation: str = "screenshot"             # the observation mode (clinigym.envs.observations)
    recovery: bool = False
    single_step: bool = False
    scenario_path: str | None = None
    gym_id: str | None = None
    medspot: dict[str, Any] | None = None
    category: str | None = None
    dataset: str | None = None                  # static mode
    delta: float | None = None
    versions: dict[str, str] = field(default_factory=dict)
    started: str | None = None
    reset_retry: str | None = None              # the first cause, when the reset had to retry
    pid: int | None = None                      # the process that ran it: the run's, a worker's, an actor's
    task: str | None = None                     # plan/goal: the instruction the agent was given
    instance: int | None = None                 # a task family's instance (its seed; clinigym.spec.task_families)
    split: str | None = None                    # ... and the split it drew from (None: all)
    outcome: EpisodeOutcome | None = None
    format: int = FORMAT
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def _convert(cls, known: dict[str, Any]) -> dict[str, Any]:
        if known.get("format", 1) > FORMAT:
            raise DataError(f"recording format {known['format']} is newer than this clinigym reads ({FORMAT})")
        if isinstance(known.get("outcome"), dict):
            known = {**known, "outcome": EpisodeOutcome.from_json(known["outcome"], "outcome")}
        return known
