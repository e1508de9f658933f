"""What the computer-use test server's "model" does next: a policy gets the request (its
turn, the screenshot the agent sent, the body) and returns the next `Action` in
observation pixels; `clinigym.testing.cua_server.CuaServer` writes it in the format's
native answer.

Building blocks, to combine:

- `follow(privileged)`: the scenario's reference path through the environment's
  privileged interface (`clinigym.envs.ground_truth(env)`): its next action, and at the
  end done() or answer(...). Tests only: no agent is ever given it.
- `script(*actions)`: these actions in order (a turn past the end is the test's mistake).
- `stop_early(policy, after)`: the policy's first `after` actions, then done(): a claim
  of completion before the task is complete. `claim_done()`: done() at once.
- `repeat(action)`: the same action every turn, until the action budget ends the episode.
- `then_more(policy, extra)`: the policy until it ends, then the extra actions (the wrong
  patient, one study too many: the test gives them), then the policy's own ending.
- `wrong_answer(policy, text)`: the policy, with its answer replaced by `text`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clinigym.core.actions import ENDING_ACTIONS, Action


@dataclass(frozen=True)
class PolicyRequest:
    turn: int                  # requests answered before this one
    screenshot: np.ndarray     # the screenshot of the request, as sent (the format's size)
    body: dict[str, Any]


Policy = Callable[[PolicyRequest], Action]


def follow(privileged: Any) -> Policy:
    def policy(request: PolicyRequest) -> Action:
        action = privileged.action()
        if action is None:
            raise RuntimeError(f"turn {request.turn}: the reference path has no next action")
        return action
    return policy


def script(*actions: Action) -> Policy:
    remaining = list(actions)

    def policy(request: PolicyRequest) -> Action:
        if not remaining:
            raise IndexError(f"turn {request.turn}: the script has only {len(actions)} actions")
        return remaining.pop(0)
    return policy


def stop_early(policy: Policy, after: int) -> Policy:
    return lambda request: policy(request) if request.turn < after else Action("done")


def claim_done() -> Policy:
    return lambda request: Action("done")


def repeat(action: Action) -> Policy:
    return lambda request: action


def then_more(policy: Policy, extra: Sequence[Action]) -> Policy:
    remaining = list(extra)
    ending: list[Action] = []          # the policy's own ending, held back while extras remain

    def more(request: PolicyRequest) -> Action:
        if ending:
            return remaining.pop(0) if remaining else ending[0]
        action = policy(request)
        if action.type in ENDING_ACTIONS and remaining:
            ending.append(action)
            return remaining.pop(0)
        return action
    return more


def wrong_answer(policy: Policy, text: str) -> Policy:
    def answer(request: PolicyRequest) -> Action:
        action = policy(request)
        return Action("answer", text=text) if action.type == "answer" else action
    return answer
