"""A single-step grounding agent (OCR, a grounding model) in the plan mode: it works down
the numbered step list it is given, one action per step with its own grounding, and
decides itself when it is done: `done()` after the last step; `fail()` when it cannot
ground a step, or when the plan ends with a question it cannot read the answer of."""
from __future__ import annotations

import re
from typing import Any

from clinigym.agents.base import Agent
from clinigym.core.actions import ACTIONS, Action

_LINE = re.compile(r"^\s*(\d+)\.\s+(.*\S)\s*$")
QUESTION = "Then answer:"


def plan_steps(instruction: str) -> list[str]:
    """The step instructions of a plan (`clinigym.envs.goal.plan_text`), in order."""
    return [m.group(2) for m in map(_LINE.match, instruction.splitlines()) if m]


class PlanFollower:
    def __init__(self, inner: Agent):
        self.inner = inner
        self.name = inner.name
        self._next = 0

    def reset(self, seed: int | None = None) -> None:
        self.inner.reset(seed)
        self._next = 0

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Action:
        steps = plan_steps(str(observation.get("instruction", "")))
        if self._next >= len(steps):
            return Action("done")
        step = steps[self._next]
        self._next += 1
        if step.startswith(QUESTION):
            return Action("fail", text="cannot read the answer from the screen")
        action = self.inner.act({**observation, "instruction": step}, info)
        kind = ACTIONS[action.type]
        if kind.point and action.point is None or kind.text and not action.text:
            return Action("fail", text=f"cannot find where to act for: {step}", meta=action.meta)
        return action
