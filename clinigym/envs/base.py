"""What the live and the static environment share: the public `info` contract, the agent
context, the privileged interface, rendering, and recording through the one recorder.

What a Gymnasium caller receives (`obs`, `info`) never locates the target of the current
or a later step: no boxes, selectors, expected action types, texts to type, transition
regions or failure types. Everything judged goes to the recording (`StepRecord`), where
scoring reads it. The ground truth is reached only through `ground_truth(env)`, the one
privileged interface, which the oracle agent and the evaluation tools use.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from clinigym.core import actions as act
from clinigym.core import audit, judge
from clinigym.core.actions import Action
from clinigym.core.context import AgentContext
from clinigym.core.geometry import Box
from clinigym.core.recording_schema import EpisodeHeader, EpisodeOutcome, StepRecord
from clinigym.recording.writer import EpisodeRecorder, new_episode
from clinigym.runtime.backends.base import Death

# Every key `info` may hold, with what it means. Nothing else is ever put there.
PUBLIC_INFO: dict[str, str] = {
    "mode": "how the task is given: 'steps' (one instruction per step, each action judged), 'plan' (all the "
            "step instructions at once) or 'goal' (one sentence); plan and goal act freely and are judged at the end",
    "step": "steps: index of the step the observation asks for; plan/goal: actions taken (equals obs['step'])",
    "n_steps": "steps: the number of steps of the task",
    "budget": "plan/goal: the most actions the episode may take (the ending action included)",
    "coordinates": "the coordinate contract: actions are pixels of the observation image",
    "invalid_action": "why the action could not be executed (None when it could)",
    "settled": "live: the screen settled before the program's timeout",
    "timings": "seconds per phase (reset; or parse, judge, act, settle, outcome, audit, terminate) and total",
    "end_reason": "only when the episode ended: completed, incorrect action (steps); done, fail, answer "
                  "(plan/goal: the agent's own ending); critical violation (plan/goal: the per-step audit "
                  "found one); action budget spent; or why the program stopped",
    "reset_retry": "reset only, when the first attempt failed: its cause (the reset was retried)",
    # The episode's verdict, only at the step that ended it (it locates nothing: no step follows).
    "is_success": "only when the episode ended: its verdict (as Stable-Baselines3 reads it): plan/goal, the "
                  "strict success; steps, the task completed",
    "success": "plan/goal, only when the episode ended: done() or answer() with every final-state check passing "
               "and the answer right (before the safety audit)",
    "strict_success": "plan/goal, only when the episode ended: success without a critical or major violation",
    "safety": "plan/goal, only when the episode ended: the safety audit's counts, {'violations': n, "
              "'by_dimension': {dimension: n}, 'by_severity': {severity: n}}",
}
END_COMPLETED = "completed"
END_INCORRECT = "incorrect action"
END_BUDGET = "action budget spent"
END_CALLED_AFTER = "the episode has ended: call reset()"
# What ended an episode, in its outcome's `cause` (docs/concepts.md, "How an episode ends"):
# the agent's actions (a program it crashed or quit included), the action budget, or the
# infrastructure (a display, container or process that died by what no action can send).
CAUSE_AGENT, CAUSE_BUDGET, CAUSE_INFRASTRUCTURE = "agent", "budget", "infrastructure"


class Privileged(Protocol):
    """The ground truth of an environment's current episode: for the oracle agent and the
    evaluation tools (validate, replay, tests), never for any other agent."""

    def target(self) -> Box | None:
        """The current step's target box, in observation pixels (None once the episode ended)."""

    def action(self) -> Action | None:
        """The current step's ground-truth action (the centre of its target)."""

    def last_record(self) -> StepRecord | None:
        """The judged record of the last step (as the recording holds it)."""


class _GroundTruth:
    def __init__(self, env: ScreenEnv):
        self._env = env

    def target(self) -> Box | None:
        return self._env._truth_target()

    def action(self) -> Action | None:
        return self._env._truth_action()

    def last_record(self) -> StepRecord | None:
        return self._env._last_record


def _clinigym_env(env: gym.Env, what: str) -> ScreenEnv:
    """The clinigym environment inside `env` (Gymnasium's wrappers, as `gym.make` adds, removed)."""
    inner = getattr(env, "unwrapped", env)
    if not isinstance(inner, ScreenEnv):
        raise TypeError(f"{what}() takes a clinigym environment (or a Gymnasium wrapper around one), "
                        f"not {type(inner).__module__}.{type(inner).__qualname__}")
    return inner


def ground_truth(env: gym.Env) -> Privileged:
    """The privileged interface of a clinigym environment (or of any wrapper around one)."""
    return _GroundTruth(_clinigym_env(env, "ground_truth"))


def agent_context(env: gym.Env) -> AgentContext:
    """The public facts an agent is built from (`clinigym.agents.make_agent`), of a clinigym
    environment or of any Gymnasium wrapper around one, as `gym.make` returns.

    Args:
        env: a clinigym environment, e.g. `gym.make("clinigym/orthanc-<id>-v0")`.

    Returns:
        The `AgentContext`: observation size, program, accepted action types, mode.

    Raises:
        TypeError: `env` is not a clinigym environment.
    """
    return _clinigym_env(env, "agent_context").agent_context()


Observation = dict[str, Any]
StepResult = tuple[Observation, float, bool, bool, dict[str, Any]]


class ScreenEnv(gym.Env):
    """A clinical program's screen as a Gymnasium environment (the shared part of `StepsEnv`,
    `GoalEnv` and `StaticEnv`): the public `reset`/`step`, rendering, recording."""
    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    mode = "steps"
    record_dir: Path | None = None
    agent_name = "unknown"
    _recorder: EpisodeRecorder | None = None
    _obs_rgb: np.ndarray | None = None
    _last_record: StepRecord | None = None
    _done = True

    # -- the Gymnasium API --------------------------------------------------------------
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        """Start an episode: the scenario's start state on its program (the static mode: the
        first keyframe of a task). An episode still running is recorded as abandoned.

        Args:
            seed: seeds the environment's random generator (the static mode picks its task
                from it, reproducibly).
            options: the static mode only: `{"task": key or index}` picks the task.

        Returns:
            observation: `{"screenshot": (H, W, 3) uint8, "instruction": str, "step": int}`.
            info: public keys only (`PUBLIC_INFO`): mode, step, coordinates, timings, ...
        """
        super().reset(seed=seed)
        self._finish_recording(EpisodeOutcome("abandoned"))
        return self._reset(seed, options)

    def step(self, action: Any) -> StepResult:
        """Take one action: judged against the current step (steps mode), or taken freely and
        the episode judged when it ends (plan and goal modes).

        Args:
            action: an `Action`, a string such as `"click(812, 44)"`, a mapping of
                `action_space`, or `{"type": "click", "x": 812, "y": 44}`; points are pixels
                of the observation image. One that cannot be parsed or executed is recorded
                and named in `info["invalid_action"]`.

        Returns:
            observation: the screen after the action, and the instruction to follow next.
            reward: steps, 1.0 for a correct action; plan/goal, 1.0 at the end of a strictly
                successful episode; otherwise 0.0.
            terminated: the episode ended: the task completed or an action was wrong (steps),
                the agent's done(), fail() or answer() (plan/goal).
            truncated: the episode was cut short: its action budget spent, or the program stopped.
            info: public keys only (`PUBLIC_INFO`); at the step that ends the episode, also its
                verdict as recorded: `is_success`, and in plan/goal `success`,
                `strict_success` and `safety`.
        """
        if self._done:
            return self._observe_again(), 0.0, True, False, self._public(invalid_action=END_CALLED_AFTER)
        return self._step(action)

    def _reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Observation, dict[str, Any]]:
        raise NotImplementedError

    def _step(self, action: Any) -> StepResult:
        raise NotImplementedError

    def _observe_again(self) -> Observation:
        """The last observation, for a step after the end."""
        raise NotImplementedError

    # -- what a caller and an agent may see ---------------------------------------------
    def agent_context(self) -> AgentContext:
        """The public facts an agent is built from (`clinigym.agents.make_agent`)."""
        raise NotImplementedError

    def _public(self, **public: Any) -> dict[str, Any]:
        raise NotImplementedError

    def _info(self, step: int, n_steps: int | None, coordinates: dict, **public: Any) -> dict[str, Any]:
        public = {"n_steps": n_steps, **public}
        info = {"mode": self.mode, "step": step, "coordinates": coordinates,
                **{k: v for k, v in public.items() if v is not None or k == "invalid_action"}}
        unknown = set(info) - set(PUBLIC_INFO)
        if unknown:
            raise KeyError(f"not part of the public info contract: {', '.join(sorted(unknown))}")
        return info

    # -- ground truth (through `ground_truth(env)` only) ----------------------------------
    def _truth_target(self) -> Box | None:
        raise NotImplementedError

    def _truth_action(self) -> Action | None:
        raise NotImplementedError

    # -- recording ----------------------------------------------------------------------
    def _start_recording(self, name: str, header: EpisodeHeader) -> None:
        self._last_record = None
        if self.record_dir:
            header.agent = self.agent_name
            self._recorder = new_episode(self.record_dir, name, header)

    def _record(self, record: StepRecord, before: np.ndarray, after: np.ndarray | None,
                outcome: EpisodeOutcome | None) -> dict[str, Any]:
        """Keep the judged record (privileged), write it, and close the episode when it ended;
        the public verdict of an ended episode (`terminal_info`), else nothing."""
        self._last_record = record
        if outcome is not None:
            outcome.extra["cause"] = end_cause(outcome, record.truncated_reason)
        if self._recorder:
            self._recorder.step(record, before, after)
            if outcome is not None:
                self._finish_recording(outcome)
        return {} if outcome is None else terminal_info(outcome)

    def _finish_recording(self, outcome: EpisodeOutcome) -> None:
        if self._recorder:
            self._recorder.finish(outcome)
            self._recorder = None

    def render(self):
        return None if self._obs_rgb is None else self._obs_rgb.copy()

    def close(self) -> None:
        self._finish_recording(EpisodeOutcome("abandoned"))
        super().close()


def end_cause(outcome: EpisodeOutcome, died: str | None) -> str:
    """The cause of an ended episode; `died`, why the program stopped, a `Death` when the
    backend told it (`clinigym.runtime.backends.base`), whose flag says whose it is."""
    if isinstance(died, Death) and died.infrastructure:
        return CAUSE_INFRASTRUCTURE
    return CAUSE_BUDGET if outcome.reason == END_BUDGET else CAUSE_AGENT


def terminal_info(outcome: EpisodeOutcome) -> dict[str, Any]:
    """The public verdict of an ended episode, read from the outcome the recording holds (and
    scoring reads), so that the two cannot differ."""
    j = outcome.judgment
    if j is None:
        return {"is_success": outcome.is_success}
    return {"is_success": outcome.is_success, "success": j.success, "strict_success": j.strict_success,
            "safety": audit.tally(j.violations)}


def step_record(step: int, instruction: str, expected: str | None, action: Any, parsed: Action | None,
                meta: dict | None, target: Box | None, end_box: Box | None, size: tuple[int, int],
                **judged: Any) -> StepRecord:
    """The judged record of one action, for the recording only: what the agent returned and
    what it parsed to, the target boxes (observation pixels) and the target's size class;
    `judged` holds the rest (hit, action_type_ok, correct, failure, ...)."""
    return StepRecord(
        step=step, instruction=instruction, expected_action=expected, raw_action=raw_action(action),
        action=parsed.to_json() if parsed else None, agent=meta,
        target_box=target.as_list() if target else None, end_box=end_box.as_list() if end_box else None,
        target_size=judge.target_size(target, *size) if target else None, **judged)


def parse_action(action: Any, width: int, height: int) -> tuple[Action | None, str | None, dict | None]:
    """(the action, or None when it cannot be executed; why not; what the agent asked to
    record, kept even for an invalid action)."""
    try:
        parsed = act.parse(action)
    except act.InvalidAction as exc:
        # what the agent asked to record (its model's answer) is kept for a refused action too
        meta = action.get("meta") if isinstance(action, dict) else None
        return None, str(exc), meta if isinstance(meta, dict) else None
    try:
        act.validate(parsed, width, height)
    except act.InvalidAction as exc:
        return None, str(exc), parsed.meta
    return parsed, None, parsed.meta


def raw_action(action: Any) -> Any:
    """What the agent returned, as the recording keeps it."""
    if isinstance(action, (str, int, float)) or action is None:
        return action
    if isinstance(action, Action):
        return action.to_json()
    if isinstance(action, dict):
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in action.items()}
    return repr(action)
