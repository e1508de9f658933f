"""A scenario on the live program as a Gymnasium environment, in the steps mode: one
instruction per step, each action judged against the step's live target (MedSPOT's
first-error protocol; `recovery=True` continues after an error).

`step()` runs in named phases, each timed in `info["timings"]`: parse (the action),
judge (against the target resolved on the screen the agent saw), act (inject it through
XTest; a wrong action is executed too, so the recording shows its consequence), settle
(the screen), outcome (the expected transition, the final check, a program that died),
terminate (first-error termination, the action budget, the next step's target).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clinigym.core import actions as act
from clinigym.core import judge
from clinigym.core.errors import ProgramError, TargetNotFound
from clinigym.core.geometry import Box
from clinigym.core.recording_schema import EpisodeOutcome
from clinigym.core.screen import Frame
from clinigym.core.timing import Timings
from clinigym.envs import spaces
from clinigym.envs.base import (
    END_BUDGET,
    END_COMPLETED,
    END_INCORRECT,
    Observation,
    StepResult,
    step_record,
)
from clinigym.envs.program import ProgramEnv
from clinigym.runtime.backends import Backend
from clinigym.runtime.display import Geometry
from clinigym.spec.scenarios import Scenario, Step
from clinigym.spec.task_families import Family


@dataclass
class _Outcome:
    """What one action led to (the judged part goes to the record only)."""
    frame: Frame
    invalid: str | None
    hit: bool = False
    type_ok: bool = False
    settled: bool = True
    settle_time: float = 0.0
    transition_seen: bool | None = None
    final_check: bool | None = None
    dead: str | None = None       # why the program stopped, as recorded
    correct: bool = False
    failure: str | None = None


class StepsEnv(ProgramEnv):
    """One scenario on its live program, in the steps mode. `backend` is a backend kind
    ("local", "docker"; default: see clinigym.runtime.backends), or a running backend to
    share between environments (the caller then closes it)."""
    accepted = act.INPUT_ACTIONS   # wait, done, fail and answer belong to the plan and goal modes

    def __init__(self, scenario: Scenario | Family | str | Path, backend: Backend | str | None = None,
                 geometry: Geometry = Geometry(), observation_size: tuple[int, int] | None = None,
                 record_dir: str | Path | None = None, recovery: bool = False,
                 max_actions: int | None = None, render_mode: str | None = None,
                 agent_name: str = "unknown", obs_mode: str = "screenshot", split: str | None = None):
        super().__init__(scenario, backend, geometry, observation_size, record_dir, render_mode, agent_name,
                         obs_mode, split)
        self.recovery = recovery
        n = len(self.scenario.steps)
        self.max_actions = judge.action_budget(n, judge.BUDGET_FACTOR if recovery else 1, max_actions)
        ow, oh = self.coords.obs_w, self.coords.obs_h
        self.observation_space = spaces.observation_space(ow, oh, n, [st.instruction for st in self.scenario.steps],
                                                          self.obs)
        self.action_space = spaces.action_space(ow, oh)
        self._step_index = 0
        self._actions = 0
        self._targets: tuple[Box | None, Box | None] = (None, None)

    # -- observations ------------------------------------------------------------------
    def _observe(self, frame: Frame, timings: Timings | None = None) -> dict:
        steps = self.scenario.steps
        instruction = steps[self._step_index].instruction if self._step_index < len(steps) else ""
        return {**self._screen(frame, timings), "instruction": instruction, "step": self._step_index}

    def _public(self, **public: Any) -> dict[str, Any]:
        return self._info(self._step_index, len(self.scenario.steps), self.coords.info(), **public)

    def _resolve_targets(self) -> None:
        """Live target boxes of the current step, resolved on the state the agent sees."""
        if self._step_index >= len(self.scenario.steps):
            self._targets = (None, None)
            return
        step = self.scenario.steps[self._step_index]
        boxes = []
        for target in (step.target, step.end_target):
            box = None if target is None else self._resolve(target, timeout=5)
            if target is not None and box is None:
                raise TargetNotFound(f"step {self._step_index + 1}: target {target.model_dump(exclude_none=True)} "
                                     "not found on the live screen")
            boxes.append(box)
        self._targets = (boxes[0], boxes[1])

    # -- reset ------------------------------------------------------------------------
    def _reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Observation, dict[str, Any]]:
        timings = Timings()
        self._draw(seed)
        frame, retry = self._start(timings)
        self._step_index, self._actions, self._done = 0, 0, False
        self._resolve_targets()
        return self._started(frame, seed, retry, timings, recovery=self.recovery)

    # -- step -------------------------------------------------------------------------
    def _step(self, action: Any) -> StepResult:
        timings = Timings()
        index = self._step_index
        step = self.scenario.steps[index]
        before = self._obs_rgb
        targets = self._targets
        parsed, invalid, meta, hit, type_ok = self._parse_and_judge(action, step, *targets, timings)
        out = _Outcome(self._frame, invalid, hit, type_ok, dead=self.backend.dead())
        try:
            with timings.phase("act"):
                self._act_step(parsed, out)
            with timings.phase("settle"):
                self._settle_step(parsed, step, out)
            with timings.phase("outcome"):
                self._outcome(step, parsed, out)
        except ProgramError as exc:   # the program or its display died under the action
            out.dead = self._death(exc)
            out.correct, out.failure = False, self._failure(parsed, out)
        with timings.phase("terminate"):
            terminated, truncated, end_reason = self._terminate(out)
        obs = self._observe(out.frame, timings)
        seconds = timings.done()
        size = (self.coords.obs_w, self.coords.obs_h)
        record = step_record(
            index, step.instruction, step.action, action, parsed, meta, *targets, size, invalid_action=out.invalid,
            hit=out.hit, action_type_ok=out.type_ok, correct=out.correct, failure=out.failure,
            transition_expected=[c.describe() for c in step.transition], transition_seen=out.transition_seen,
            final_check=out.final_check, settled=out.settled, settle_time=out.settle_time, timings=seconds,
            truncated_reason=out.dead)
        self._done = terminated or truncated
        ended = EpisodeOutcome("complete" if terminated and out.correct else "truncated" if truncated else "failed",
                               self._step_index, self._actions, out.dead or out.failure or
                               (END_BUDGET if truncated else None)) if self._done else None
        verdict = self._record(record, before, self._obs_rgb, ended)
        info = self._public(invalid_action=out.invalid, settled=out.settled, timings=seconds, end_reason=end_reason,
                            **verdict)
        return obs, float(out.correct), terminated, truncated, info

    def _act_step(self, parsed: act.Action | None, out: _Outcome) -> None:
        if parsed is None or out.dead is not None:
            return
        if parsed.type not in self.accepted:
            out.invalid = f"{parsed.type}() ends a plan or goal episode; this is a steps episode"
            return
        out.invalid = self._act(parsed)

    def _settle_step(self, parsed: act.Action | None, step: Step, out: _Outcome) -> None:
        if parsed is None or out.dead is not None or parsed.type not in self.accepted:
            return
        out.frame, out.settled, out.settle_time, out.dead = self._settle(_quitting(step))

    def _outcome(self, step: Step, parsed: act.Action | None, out: _Outcome) -> None:
        if parsed is not None and out.dead is None:
            out.transition_seen, out.frame = self._transition(step, out.hit and out.type_ok and not out.invalid,
                                                              self._frame, out.frame)
        out.correct = bool(out.hit and out.type_ok and not out.invalid and out.transition_seen and out.dead is None)
        if out.correct and self._step_index == len(self.scenario.steps) - 1 and self.scenario.check:
            out.final_check = self._checks_hold(self.app.settle.timeout)
            out.correct = out.final_check
        if not out.correct and out.dead is None:
            # Killed or stopped from outside while its transition was awaited: the action is
            # not judged wrong for what the program could not show.
            died = self.backend.dead(_quitting(step))
            out.dead = died if died is not None and died.infrastructure else None
        if not out.correct:
            out.failure = self._failure(parsed, out)

    def _terminate(self, out: _Outcome) -> tuple[bool, bool, str | None]:
        """(terminated, truncated, public end reason); resolves the next step's targets."""
        self._actions += 1
        if out.correct:
            self._step_index += 1
        if out.dead is not None:
            return False, True, f"the program stopped: {out.dead}"
        if out.correct and self._step_index == len(self.scenario.steps):
            return True, False, END_COMPLETED
        if not out.correct and not self.recovery:
            return True, False, END_INCORRECT
        if judge.budget_spent(self._actions, self.max_actions):
            return False, True, END_BUDGET
        try:
            self._resolve_targets()
        except TargetNotFound as exc:
            # recorded in full (the agent is not told where the target was sought); a program
            # that died meanwhile is the cause
            out.dead = self.backend.dead() or str(exc)
            return False, True, "the program did not reach a state in which the next step can be judged"
        return False, False, None

    def _failure(self, parsed: act.Action | None, out: _Outcome) -> str:
        target = self._targets[0]
        if out.dead is not None:
            return "app_crashed"
        if parsed is None or out.invalid or target is None:
            return "no_prediction"
        if not out.hit:
            return judge.failure_type(self._point_of(parsed), target, self.coords.obs_w, self.coords.obs_h)
        if not out.type_ok:
            return "wrong_action_type"
        return "no_transition"

    # -- ground truth (privileged: `clinigym.envs.ground_truth`) -----------------------------
    def _truth_target(self) -> Box | None:
        return None if self._done else self._targets[0]

    def _truth_action(self) -> act.Action | None:
        if self._done or self._step_index >= len(self.scenario.steps):
            return None
        target, end = self._targets
        return None if target is None else self._step_action(self.scenario.steps[self._step_index], target, end)


def _quitting(step: Step) -> frozenset[str]:
    """The processes `step` expects to quit (with status 0)."""
    return frozenset(c.exited for c in step.transition if c.exited)
