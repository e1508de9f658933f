"""The oracle: the scenario's own ground truth, the centre of each live target.

It alone is built with the environment's privileged interface
(`clinigym.envs.ground_truth(env)`); every other agent sees only observations.
"""
from __future__ import annotations

from typing import Any

from clinigym.core.actions import Action


class OracleAgent:
    name = "oracle"

    def __init__(self, privileged):
        self.truth = privileged

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Action | None:
        return self.truth.action()
