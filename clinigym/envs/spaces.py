"""The observation and action spaces shared by the live and the static environment,
so that any agent runs on both unchanged, and the batched form of actions for vector
environments."""
from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from clinigym.core.actions import ACTION_TYPES, InvalidAction, parse
from clinigym.envs.observations import OBS_MODES, ObsMode

TEXT_CHARSET = string.printable
KEYS_CHARSET = string.ascii_letters + string.digits + "+_"
MAX_INSTRUCTION = 1000


def observation_space(width: int, height: int, n_steps: int, instructions: list[str],
                      mode: ObsMode = OBS_MODES["screenshot"]) -> spaces.Dict:
    # The charset holds every character the instructions use (MedSPOT's are not all ASCII).
    charset = "".join(sorted(set(TEXT_CHARSET) | set("".join(instructions))))
    longest = max([MAX_INSTRUCTION, *map(len, instructions)])
    return spaces.Dict({
        **mode.spaces(width, height),
        "instruction": spaces.Text(max_length=longest, charset=charset),
        "step": spaces.Discrete(n_steps + 1),
    })


def action_space(width: int, height: int) -> spaces.Dict:
    point = spaces.Box(low=0, high=np.array([width - 1, height - 1]), shape=(2,), dtype=np.int64)
    return spaces.Dict({
        "type": spaces.Discrete(len(ACTION_TYPES)),
        "point": point,
        "end_point": point,
        # Empty where the action type takes none (a click's text); keys such as alt+F4, Page_Down.
        "text": spaces.Text(max_length=64, min_length=0, charset=TEXT_CHARSET),
        "keys": spaces.Text(max_length=32, min_length=0, charset=KEYS_CHARSET),
        "scroll": spaces.Box(-5, 5, (2,), np.int64),
    })


def batch_actions(actions: Sequence[Any]) -> dict[str, Any]:
    """Per-environment actions (strings such as ``click(812, 44)``, mappings or `Action`s)
    as the one batched structure a vector environment of `action_space` steps with
    (`gym.make_vec`): arrays for the numbers, tuples for the texts.

    A field an action does not use gets a filler its type ignores, except that a ``type``
    always clicks its point first in this structure, so one without a point is refused,
    as is an action that does not parse: the error names the environment."""
    n = len(actions)
    batch = {"type": np.zeros(n, np.int64), "point": np.zeros((n, 2), np.int64),
             "end_point": np.zeros((n, 2), np.int64), "scroll": np.zeros((n, 2), np.int64)}
    texts, keys = [], []
    for i, raw in enumerate(actions):
        try:
            action = parse(raw)
        except InvalidAction as exc:
            raise InvalidAction(f"environment {i}: {exc}") from None
        if action.type == "type" and action.point is None:
            raise InvalidAction(f"environment {i}: in the batched structure a type action clicks its point "
                                f"first; give one, e.g. type(x, y, 'text'): {raw!r}")
        batch["type"][i] = ACTION_TYPES.index(action.type)
        for name in ("point", "end_point"):
            if getattr(action, name) is not None:
                batch[name][i] = np.rint(getattr(action, name))
        batch["scroll"][i] = action.scroll
        texts.append(action.text or "")
        keys.append(action.keys or "")
    return batch | {"text": tuple(texts), "keys": tuple(keys)}
