"""The observation and action spaces shared by the live and the static environment,
so that any agent runs on both unchanged."""
from __future__ import annotations

import string

import numpy as np
from gymnasium import spaces

from clinigym.core.actions import ACTION_TYPES

TEXT_CHARSET = string.printable
MAX_INSTRUCTION = 1000


def observation_space(width: int, height: int, n_steps: int, instructions: list[str]) -> spaces.Dict:
    # The charset holds every character the instructions use (MedSPOT's are not all ASCII).
    charset = "".join(sorted(set(TEXT_CHARSET) | set("".join(instructions))))
    longest = max([MAX_INSTRUCTION, *map(len, instructions)])
    return spaces.Dict({
        "screenshot": spaces.Box(0, 255, (height, width, 3), np.uint8),
        "instruction": spaces.Text(max_length=longest, charset=charset),
        "step": spaces.Discrete(n_steps + 1),
    })


def action_space(width: int, height: int) -> spaces.Dict:
    point = spaces.Box(low=0, high=np.array([width - 1, height - 1]), shape=(2,), dtype=np.int64)
    return spaces.Dict({
        "type": spaces.Discrete(len(ACTION_TYPES)),
        "point": point,
        "end_point": point,
        "text": spaces.Text(max_length=64, charset=TEXT_CHARSET),
        "keys": spaces.Text(max_length=32, charset=string.ascii_letters + "+"),
        "scroll": spaces.Box(-5, 5, (2,), np.int64),
    })
