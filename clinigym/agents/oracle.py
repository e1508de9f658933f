"""The oracle: the scenario's own ground truth, the centre of each live target.
It is given the environment (privileged access), unlike every other agent."""
from __future__ import annotations

from typing import Any

from clinigym.actions import Action


class OracleAgent:
    name = "oracle"

    def __init__(self, env):
        self.env = env.unwrapped

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Action | None:
        return self.env.oracle_action()
