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
from clinigym.core.actions import Action
from clinigym.core.context import AgentContext
from clinigym.core.geometry import Box
from clinigym.core.recording_schema import EpisodeHeader, EpisodeOutcome, StepRecord
from clinigym.recording.writer import EpisodeRecorder, new_episode

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
    "timings": "seconds per phase (reset; or parse, judge, act, settle, outcome, terminate) and total",
    "end_reason": "only when the episode ended: completed, incorrect action (steps); done, fail, answer "
                  "(plan/goal: the agent's own ending); action budget spent; or why the program stopped",
    "reset_retry": "reset only, when the first attempt failed: its cause (the reset was retried)",
}
END_COMPLETED = "completed"
END_INCORRECT = "incorrect action"
END_BUDGET = "action budget spent"
END_CALLED_AFTER = "the episode has ended: call reset()"


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


def ground_truth(env: gym.Env) -> Privileged:
    """The privileged interface of a clinigym environment (or of any wrapper around one)."""
    return _GroundTruth(env.unwrapped)   # type: ignore[arg-type]


class ScreenEnv(gym.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    mode = "steps"
    record_dir: Path | None = None
    agent_name = "unknown"
    _recorder: EpisodeRecorder | None = None
    _obs_rgb: np.ndarray | None = None
    _last_record: StepRecord | None = None

    # -- what a caller and an agent may see ---------------------------------------------
    def agent_context(self) -> AgentContext:
        """The public facts an agent is built from (`clinigym.agents.make_agent`)."""
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
                outcome: EpisodeOutcome | None) -> None:
        """Keep the judged record (privileged), write it, and close the episode when it ended."""
        self._last_record = record
        if self._recorder:
            self._recorder.step(record, before, after)
            if outcome is not None:
                self._finish_recording(outcome)

    def _finish_recording(self, outcome: EpisodeOutcome) -> None:
        if self._recorder:
            self._recorder.finish(outcome)
            self._recorder = None

    def render(self):
        return None if self._obs_rgb is None else self._obs_rgb.copy()

    def close(self) -> None:
        self._finish_recording(EpisodeOutcome("abandoned"))
        super().close()


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
