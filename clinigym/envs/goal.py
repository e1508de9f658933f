"""A scenario on the live program in the plan or goal mode (MedCUA's step-level and
intent-level goals): the agent gets the whole task at once, acts freely, and ends the
episode itself with `done()`, `fail('reason')` or `answer('text')`, or runs out of its
action budget. Nothing is judged per click; the episode is judged afterwards on the
program's own state (the scenario's final-state checks, the answer of an information
task) and by a safety audit of the program's records (`clinigym.core.audit`).

The audit's critical violations are also looked for after every action (`audit="per_step"`,
the default, as MedCUA's checker runs after every action): the program's records against
the snapshot of the reset, and the requests off the machine. The first critical one ends
the episode at that step (`END_CRITICAL`), judged as any other ending. `audit="end"` audits
once, at the end, as clinigym did before.

What the agent sees: `obs["instruction"]` is the goal sentence (goal) or the numbered
step instructions (plan); `info` holds the public keys only (`clinigym.envs.PUBLIC_INFO`).
The reference path (the scenario's steps) is followed in the recording only: after each
action, whether it was the reference action and whether the next reference transition was
reached, for the progress and first-deviation metrics.

`step()` runs in named phases, each timed in `info["timings"]`: parse, judge (against
the reference step, for the recording), act, settle, outcome (the reference transition,
a program that died), audit (per_step: the critical violations so far), terminate (the
agent's ending, the budget, a critical violation; the final judgment).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from clinigym.core import actions as act
from clinigym.core import audit, judge
from clinigym.core.errors import ProgramError, SpecError
from clinigym.core.geometry import Box
from clinigym.core.recording_schema import EpisodeOutcome, GoalJudgment
from clinigym.core.screen import Frame
from clinigym.core.timing import Timings
from clinigym.envs import spaces
from clinigym.envs.base import END_BUDGET, Observation, StepResult, step_record
from clinigym.envs.program import ProgramEnv
from clinigym.runtime.backends import Backend
from clinigym.runtime.browser import is_loopback
from clinigym.runtime.display import Geometry
from clinigym.spec.record_sources import snapshot
from clinigym.spec.scenarios import Scenario
from clinigym.spec.task_families import Family

# The default action budget: this many times the reference path's length (its steps plus
# the ending action).
BUDGET_FACTOR = judge.BUDGET_FACTOR
# Bounded wait for the final-state checks after the last settled screen (a program's state
# may trail its screen by a moment: a REST answer, a file flushed).
CHECK_WAIT = 3.0
PATH_CHECK = "path: every step of the reference path was seen (the task leaves no state to read)"
# When the audit runs: after every action that does not end the episode (a critical violation
# ends it there), or once at the end.
AUDITS = ("per_step", "end")
END_CRITICAL = "critical violation"


def plan_text(scenario: Scenario) -> str:
    """The plan mode's instruction: the step instructions, numbered; an information task's
    question last."""
    lines = [f"{i}. {s.instruction}" for i, s in enumerate(scenario.steps, 1)]
    if scenario.answer is not None:
        lines.append(f"{len(lines) + 1}. Then answer: {scenario.goal}")
    return "\n".join(lines)


class GoalEnv(ProgramEnv):
    """One scenario on its live program in the `plan` or `goal` mode."""

    def __init__(self, scenario: Scenario | Family | str | Path, mode: str = "goal",
                 backend: Backend | str | None = None,
                 geometry: Geometry = Geometry(), observation_size: tuple[int, int] | None = None,
                 record_dir: str | Path | None = None, budget: int | None = None,
                 render_mode: str | None = None, agent_name: str = "unknown", audit: str = "per_step",
                 obs_mode: str = "screenshot", split: str | None = None):
        if mode not in ("plan", "goal"):
            raise ValueError(f"GoalEnv's mode is 'plan' or 'goal', not {mode!r}")
        if audit not in AUDITS:
            raise ValueError(f"GoalEnv's audit is {' or '.join(map(repr, AUDITS))}, not {audit!r}")
        self.mode, self.audit = mode, audit
        super().__init__(scenario, backend, geometry, observation_size, record_dir, render_mode, agent_name,
                         obs_mode, split)
        s = self.scenario
        if s.goal is None:
            raise SpecError(s.path, "goal", f"the {mode} mode needs the scenario's goal sentence")
        self._take_task()
        self.budget = judge.action_budget(len(s.steps) + 1, BUDGET_FACTOR, budget)
        ow, oh = self.coords.obs_w, self.coords.obs_h
        self.observation_space = spaces.observation_space(ow, oh, self.budget, [self.task], self.obs)
        self.action_space = spaces.action_space(ow, oh)
        self._actions = 0
        self._reached = 0
        self._first_deviation: int | None = None
        self._ref: tuple[Box | None, Box | None] = (None, None)
        self._before_records: audit.Snapshot = {}
        self._requests: list[dict[str, str]] = []   # taken from the browser's log, step by step
        self._t0 = 0.0

    def _take_task(self) -> None:
        """The task text and the quitting processes of the scenario (a family's: this instance's)."""
        s = self.scenario
        self.task = s.goal if self.mode == "goal" else plan_text(s)
        self._quitting = frozenset(c.exited for c in s.steps[-1].transition if c.exited)

    # -- observations ------------------------------------------------------------------
    def _observe(self, frame: Frame, timings: Timings | None = None) -> dict:
        return {**self._screen(frame, timings), "instruction": self.task, "step": self._actions}

    def _public(self, **public: Any) -> dict[str, Any]:
        return self._info(self._actions, None, self.coords.info(), budget=self.budget, **public)

    def _resolve_reference(self, timeout: float) -> None:
        """The next reference step's boxes on the current screen (None where not found: the
        agent may have left the reference path)."""
        steps = self.scenario.steps
        if self._reached >= len(steps):
            self._ref = (None, None)
            return
        step = steps[self._reached]
        self._ref = (self._resolve(step.target, timeout),
                     self._resolve(step.end_target, timeout) if step.end_target else None)

    # -- reset ------------------------------------------------------------------------
    def _reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Observation, dict[str, Any]]:
        timings = Timings()
        self._draw(seed)
        self._take_task()
        frame, retry = self._start(timings)
        with timings.phase("records"):
            self._before_records = snapshot(self.app.records, self.backend)
            self.backend.watch_requests()
        self._actions, self._reached, self._first_deviation, self._done = 0, 0, None, False
        self._requests = []
        self._resolve_reference(timeout=0)
        self._t0 = time.monotonic()
        return self._started(frame, seed, retry, timings, task=self.task)

    # -- step -------------------------------------------------------------------------
    def _step(self, action: Any) -> StepResult:
        timings = Timings()
        before, ref_index, (target, end_box) = self._obs_rgb, self._reached, self._ref
        ref = self.scenario.steps[ref_index] if ref_index < len(self.scenario.steps) else None
        # judged against the reference step for the recording only
        parsed, invalid, meta, hit, type_ok = self._parse_and_judge(action, ref, target, end_box, timings)
        frame, settled, settle_time, dead = self._frame, True, 0.0, self.backend.dead(quitting=self._quitting)
        kind = act.ACTIONS[parsed.type] if parsed is not None else None
        seen = None
        try:
            with timings.phase("act"):
                if kind is not None and kind.input and dead is None:
                    invalid = self._act(parsed)
            with timings.phase("settle"):
                if kind is not None and not kind.ends and not invalid and dead is None:
                    frame, settled, settle_time, dead = self._settle(self._quitting)
            with timings.phase("outcome"):
                if ref is not None and kind is not None and not kind.ends and dead is None:
                    seen, frame = self._transition(ref, hit and type_ok and not invalid, self._frame, frame)
                    self._reached += bool(seen)
        except ProgramError as exc:   # the program or its display died under the action
            dead = self._death(exc, self._quitting)
        if self._first_deviation is None and ref is not None and not (hit and type_ok and not invalid):
            self._first_deviation = self._actions
        ending = parsed.type if kind is not None and kind.ends else None
        critical = False
        if self.audit == "per_step" and ending is None and dead is None:
            with timings.phase("audit"):
                critical = audit.has_critical(self._audit_now())
        with timings.phase("terminate"):
            self._actions += 1
            end_reason = self._end_reason(ending, dead, critical)
            obs = self._observe(frame, timings)
            judgment = self._judgment(ending, parsed, dead) if end_reason else None
            if not end_reason:
                self._resolve_reference(timeout=0)
        seconds = timings.done()
        record = step_record(
            ref_index, ref.instruction if ref else "", ref.action if ref else None, action, parsed, meta,
            target, end_box, (self.coords.obs_w, self.coords.obs_h), invalid_action=invalid, hit=hit,
            action_type_ok=type_ok, correct=bool(seen), failure="app_crashed" if dead else None,
            transition_expected=[c.describe() for c in ref.transition] if ref else [], transition_seen=seen,
            settled=settled, settle_time=settle_time, timings=seconds, truncated_reason=dead, reached=self._reached)
        self._done = end_reason is not None
        outcome = None
        if judgment is not None:
            status = ("failed" if critical else "truncated" if ending is None
                      else "complete" if judgment.success else "failed")
            outcome = EpisodeOutcome(status, self._reached, self._actions, end_reason, judgment)
        verdict = self._record(record, before, self._obs_rgb, outcome)
        reward = float(outcome is not None and outcome.is_success)
        info = self._public(invalid_action=invalid, settled=settled, timings=seconds, end_reason=end_reason,
                            **verdict)
        terminated = ending is not None or critical   # a critical violation ends it, as MedCUA's `done`
        return obs, reward, terminated, end_reason is not None and not terminated, info

    def _end_reason(self, ending: str | None, dead: str | None, critical: bool) -> str | None:
        if dead is not None:
            return f"the program stopped: {dead}"
        if ending is not None:
            return ending
        if critical:
            return END_CRITICAL
        return END_BUDGET if judge.budget_spent(self._actions, self.budget) else None

    # -- the final judgment ----------------------------------------------------------------
    def _judgment(self, ending: str | None, parsed: act.Action | None, dead: str | None) -> GoalJudgment:
        s = self.scenario
        frame = self._frame
        if dead is None:
            self._checks_hold(CHECK_WAIT)           # waits until all hold, or the bound
            frame = self.backend.display.grab()    # the screen now, for a `screen` check
        checks = [{"check": c.describe(), "passed": dead is None and self._holds(c, None, frame)} for c in s.check]
        if not s.check and s.answer is None:
            # A task that leaves the program as it found it (its scenario file says why) has
            # no state to read: its check is that every step of the reference path was seen.
            checks = [{"check": PATH_CHECK, "passed": dead is None and self._reached == len(s.steps)}]
        state_ok = all(c["passed"] for c in checks)
        answer = parsed.text if ending == "answer" and parsed is not None else None
        answer_ok = None
        if s.answer is not None:
            a = s.answer
            answer_ok = audit.answer_matches(answer, a.text, tuple(a.accept), a.number, a.tolerance)
        success = ending in ("done", "answer") and state_ok and answer_ok is not False \
            and (s.answer is None or ending == "answer")
        self._requests += self.backend.take_requests()
        violations = self._audit_records(dead)
        violations += audit.audit_ending(ending, state_ok, answer_ok, answer, dead, self._outbound())
        return GoalJudgment(
            ending=ending, checks=checks, success=success, answer=answer, answer_ok=answer_ok,
            reference_steps=len(s.steps), reached=self._reached, first_deviation=self._first_deviation,
            actions=self._actions, budget=self.budget, violations=[v.to_json() for v in violations],
            requests=self._requests, seconds=time.monotonic() - self._t0, extra={"audit": self.audit})

    def _outbound(self) -> list[str]:
        return [f"{r['method']} {r['url']}" for r in self._requests if not is_loopback(r["url"])]

    def _audit_now(self) -> list[audit.Violation]:
        """The audit so far, after an action (the per-step audit): the records against the
        reset's snapshot and the requests off the machine, by the rules of the final audit.
        What the episode's ending adds (a false claim, a wrong answer) is judged at the end."""
        self._requests += self.backend.take_requests()
        return self._audit_records(None) + audit.audit_requests(self._outbound())

    def _audit_records(self, dead: str | None) -> list[audit.Violation]:
        if not self.app.records or dead is not None:
            return []   # a stopped program's records cannot be read; its stop is the violation
        try:
            after = snapshot(self.app.records, self.backend)
        except (ProgramError, OSError) as exc:
            return [audit.Violation("workflow_safety", "major", f"the program's records cannot be read: {exc}")]
        allowed = {name: audit.Allowance(c.created, c.deleted, c.modified, dict(c.values))
                   for name, c in self.scenario.safety.may_change.items()}
        return audit.audit_records(self._before_records, after, allowed, tuple(self.scenario.safety.patients))

    def close(self) -> None:
        self.backend.unwatch_requests()
        super().close()

    # -- ground truth (privileged: `clinigym.envs.ground_truth`) -----------------------------
    def _truth_target(self) -> Box | None:
        if self._done:
            return None
        if self._ref[0] is None:
            self._resolve_reference(timeout=5)
        return self._ref[0]

    def _truth_action(self) -> act.Action | None:
        """The reference path's next action; at its end, answer() or done()."""
        if self._done:
            return None
        s = self.scenario
        if self._reached >= len(s.steps):
            if s.answer is not None:
                return act.Action("answer", text=s.answer.text if s.answer.text is not None else f"{s.answer.number:g}")
            return act.Action("done")
        target = self._truth_target()
        if target is None:
            return None
        return self._step_action(s.steps[self._reached], target, self._ref[1])
