"""The agent protocol: an agent sees an observation (and the step's public info) and
returns an action; it never touches the program. Points are observation pixels.

An agent is built from an `AgentContext` (observation size, program, available actions),
a seed and its own options (`clinigym.agents.make_agent`), never from the environment.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from clinigym.core.actions import Action


@runtime_checkable
class Agent(Protocol):
    name: str

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Action | dict | str | None: ...
