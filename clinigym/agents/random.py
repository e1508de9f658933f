"""A uniformly random clicker: the chance baseline."""
from __future__ import annotations

from typing import Any

import numpy as np

from clinigym.core.actions import Action
from clinigym.core.context import AgentContext


class RandomAgent:
    name = "random"

    def __init__(self, context: AgentContext | None = None, seed: int | None = None):
        self.rng = np.random.default_rng(seed)
        self.size = context.observation_size if context is not None else None   # (width, height)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Action:
        # Without a context, the screenshot's size (an observation mode without one needs the context).
        w, h = self.size or observation["screenshot"].shape[1::-1]
        return Action("click", (float(self.rng.integers(0, w)), float(self.rng.integers(0, h))))
