"""Agent actions: one typed form, parsed from a dict, a Gymnasium space sample or a
string such as ``click(812, 44)``.

Coordinate contract: every point is in pixels of the observation image
(x to the right, y down, origin at the top-left pixel). A point outside the
image is invalid; it is never clamped.
"""
from __future__ import annotations

import ast
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

import numpy as np

ACTION_TYPES = ("click", "double_click", "right_click", "drag", "hover", "type", "scroll", "key")
CLICK_FAMILY = ("click", "double_click", "right_click")
NEEDS_POINT = CLICK_FAMILY + ("drag", "hover", "scroll")


class InvalidAction(ValueError):
    """An action that cannot be executed; reported in `info`, never raised out of step()."""


@dataclass(frozen=True)
class Action:
    type: str
    point: tuple[float, float] | None = None
    end_point: tuple[float, float] | None = None
    text: str | None = None
    keys: str | None = None
    scroll: tuple[int, int] = (0, 0)   # (dx, dy) in wheel notches, dy > 0 scrolls down
    # What the agent wants recorded with the step (model text, prompt, latency); not acted on.
    meta: dict | None = field(default=None, compare=False)

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()
                if v is not None and k != "meta" and not (k == "scroll" and v == (0, 0))}


def _point(value: Any, name: str) -> tuple[float, float] | None:
    if value is None:
        return None
    try:
        arr = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise InvalidAction(f"{name} is not a pair of numbers: {value!r}") from None
    if arr.shape != (2,) or not np.all(np.isfinite(arr)):
        raise InvalidAction(f"{name} must be two finite numbers, got {value!r}")
    return float(arr[0]), float(arr[1])


def from_mapping(data: Mapping[str, Any]) -> Action:
    kind = data.get("type")
    if isinstance(kind, (int, np.integer)) and not isinstance(kind, bool):
        if not 0 <= int(kind) < len(ACTION_TYPES):
            raise InvalidAction(f"action type index {kind} out of range")
        kind = ACTION_TYPES[int(kind)]
    if kind not in ACTION_TYPES:
        raise InvalidAction(f"unknown action type {kind!r}; known: {', '.join(ACTION_TYPES)}")
    point = _point(data.get("point"), "point")
    if point is None and data.get("x") is not None:
        point = _point((data.get("x"), data.get("y")), "x, y")
    end = _point(data.get("end_point"), "end_point")
    if end is None and data.get("x2") is not None:
        end = _point((data.get("x2"), data.get("y2")), "x2, y2")
    scroll = data.get("scroll", (0, 0))
    scroll_pair = tuple(int(v) for v in np.asarray(scroll).reshape(-1))
    if len(scroll_pair) != 2:
        raise InvalidAction(f"scroll must be (dx, dy), got {scroll!r}")
    return Action(kind, point, end, data.get("text"), data.get("keys"), scroll_pair, data.get("meta"))


_CALL = re.compile(r"^\s*([a-z_]+)\s*\((.*)\)\s*$", re.S)


def from_string(text: str) -> Action:
    """`click(812, 44)`, `double_click(x, y)`, `right_click(x, y)`, `hover(x, y)`,
    `drag(x1, y1, x2, y2)`, `type('text')` or `type(x, y, 'text')`,
    `scroll(x, y, dy)` or `scroll(x, y, dx, dy)`, `key('ctrl+c')`."""
    m = _CALL.match(text)
    if not m:
        raise InvalidAction(f"cannot parse action {text!r}")
    kind, args_src = m.groups()
    try:
        args = ast.literal_eval(f"({args_src},)") if args_src.strip() else ()
    except (ValueError, SyntaxError):
        raise InvalidAction(f"cannot parse the arguments of {text!r}") from None
    nums = [a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)]
    strs = [a for a in args if isinstance(a, str)]
    fields: dict[str, Any] = {"type": kind}
    if kind == "key":
        fields["keys"] = strs[0] if strs else None
    elif kind == "type":
        fields["text"] = strs[0] if strs else None
        if len(nums) >= 2:
            fields["point"] = nums[:2]
    elif kind == "drag":
        if len(nums) != 4:
            raise InvalidAction(f"drag needs x1, y1, x2, y2: {text!r}")
        fields["point"], fields["end_point"] = nums[:2], nums[2:]
    elif kind == "scroll":
        if len(nums) not in (3, 4):
            raise InvalidAction(f"scroll needs x, y, dy or x, y, dx, dy: {text!r}")
        fields["point"] = nums[:2]
        fields["scroll"] = (0, nums[2]) if len(nums) == 3 else (nums[2], nums[3])
    else:
        if len(nums) != 2:
            raise InvalidAction(f"{kind} needs x, y: {text!r}")
        fields["point"] = nums
    return from_mapping(fields)


def parse(action: Any) -> Action:
    if isinstance(action, Action):
        return action
    if isinstance(action, str):
        return from_string(action)
    if isinstance(action, Mapping):
        return from_mapping(action)
    raise InvalidAction(f"an action is a dict or a string, got {type(action).__name__}")


def validate(action: Action, width: int, height: int) -> None:
    """Raise InvalidAction unless the action can be executed on a width x height image."""
    if action.type in NEEDS_POINT and action.point is None:
        raise InvalidAction(f"{action.type} needs a point")
    if action.type == "drag" and action.end_point is None:
        raise InvalidAction("drag needs an end point")
    if action.type == "type" and not action.text:
        raise InvalidAction("type needs text")
    if action.type == "key" and not action.keys:
        raise InvalidAction("key needs keys")
    for name, p in (("point", action.point), ("end_point", action.end_point)):
        if p is not None and not (0 <= p[0] <= width - 1 and 0 <= p[1] <= height - 1):
            raise InvalidAction(f"{name} ({p[0]:g}, {p[1]:g}) is outside the "
                                f"{width}x{height} observation")
