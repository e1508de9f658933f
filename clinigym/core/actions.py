"""Agent actions: the registry of action types, one typed form, and parsing from a dict,
a Gymnasium space sample or a string such as ``click(812, 44)``.

Every other part (the action space, scenario steps, the display's input, the collection
page) takes its list of action types from `ACTIONS`.

Coordinate contract: every point is in pixels of the observation image
(x to the right, y down, origin at the top-left pixel). A point outside the
image is invalid; it is never clamped.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from clinigym.core.errors import InvalidAction

__all__ = ["ACTIONS", "ACTION_TYPES", "CLICK_FAMILY", "ENDING_ACTIONS", "INPUT_ACTIONS", "STEP_ACTIONS",
           "Action", "ActionKind", "InvalidAction", "parse", "validate"]

Args = Callable[[str, list[float], list[str]], dict[str, Any]]


def _xy(kind: str, nums: list[float], strs: list[str]) -> dict[str, Any]:
    if len(nums) != 2:
        raise InvalidAction(f"{kind} needs x, y")
    return {"point": nums}


def _drag(kind: str, nums: list[float], strs: list[str]) -> dict[str, Any]:
    if len(nums) != 4:
        raise InvalidAction("drag needs x1, y1, x2, y2")
    return {"point": nums[:2], "end_point": nums[2:]}


def _type(kind: str, nums: list[float], strs: list[str]) -> dict[str, Any]:
    return {"text": strs[0] if strs else None, **({"point": nums[:2]} if len(nums) >= 2 else {})}


def _scroll(kind: str, nums: list[float], strs: list[str]) -> dict[str, Any]:
    if len(nums) not in (3, 4):
        raise InvalidAction("scroll needs x, y, dy or x, y, dx, dy")
    return {"point": nums[:2], "scroll": (0, nums[2]) if len(nums) == 3 else (nums[2], nums[3])}


def _key(kind: str, nums: list[float], strs: list[str]) -> dict[str, Any]:
    return {"keys": strs[0] if strs else None}


def _none(kind: str, nums: list[float], strs: list[str]) -> dict[str, Any]:
    if nums or strs:
        raise InvalidAction(f"{kind} takes no arguments")
    return {}


def _text(kind: str, nums: list[float], strs: list[str]) -> dict[str, Any]:
    if nums or len(strs) > 1:
        raise InvalidAction(f"{kind} takes one text")
    return {"text": strs[0] if strs else None}


@dataclass(frozen=True)
class ActionKind:
    """One action type: what it needs, its string form, whether a scenario step can
    expect it (scroll and key have no target to judge), whether it sends input to the
    program (wait only lets the screen settle again) and whether it ends a plan or goal
    episode (the agent's own "finished": done, fail, answer)."""
    name: str
    form: str                   # the string form, for help texts
    args: Args                  # string arguments -> fields
    point: bool = True          # needs a point
    end_point: bool = False
    text: bool = False
    keys: bool = False
    step: bool = True
    input: bool = True
    ends: bool = False


# The order is the index of the action space's `type` (Discrete): never reorder, only append.
ACTIONS: dict[str, ActionKind] = {k.name: k for k in (
    ActionKind("click", "click(x, y)", _xy),
    ActionKind("double_click", "double_click(x, y)", _xy),
    ActionKind("right_click", "right_click(x, y)", _xy),
    ActionKind("drag", "drag(x1, y1, x2, y2)", _drag, end_point=True),
    ActionKind("hover", "hover(x, y)", _xy),
    ActionKind("type", "type('text') or type(x, y, 'text')", _type, point=False, text=True),
    ActionKind("scroll", "scroll(x, y, dy) or scroll(x, y, dx, dy)", _scroll, step=False),
    ActionKind("key", "key('ctrl+c')", _key, point=False, keys=True, step=False),
    ActionKind("wait", "wait()", _none, point=False, step=False, input=False),
    ActionKind("done", "done()", _none, point=False, step=False, input=False, ends=True),
    ActionKind("fail", "fail('reason')", _text, point=False, step=False, input=False, ends=True),
    ActionKind("answer", "answer('text')", _text, point=False, text=True, step=False, input=False, ends=True),
)}
ACTION_TYPES = tuple(ACTIONS)
CLICK_FAMILY = ("click", "double_click", "right_click")
STEP_ACTIONS = tuple(k for k, v in ACTIONS.items() if v.step)
INPUT_ACTIONS = tuple(k for k, v in ACTIONS.items() if v.input)      # what the steps mode accepts
ENDING_ACTIONS = tuple(k for k, v in ACTIONS.items() if v.ends)


@dataclass(frozen=True)
class Action:
    type: str
    point: tuple[float, float] | None = None
    end_point: tuple[float, float] | None = None
    text: str | None = None
    keys: str | None = None
    scroll: tuple[int, int] = (0, 0)   # (dx, dy) in wheel notches, dy > 0 scrolls down
    # What the agent wants recorded with the step (model text, prompt, latency); not acted on.
    meta: dict[str, Any] | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
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
    if kind not in ACTIONS:
        raise InvalidAction(f"unknown action type {kind!r}; known: {', '.join(ACTION_TYPES)}")
    point = _point(data.get("point"), "point")
    if point is None and data.get("x") is not None:
        point = _point((data.get("x"), data.get("y")), "x, y")
    end = _point(data.get("end_point"), "end_point")
    if end is None and data.get("x2") is not None:
        end = _point((data.get("x2"), data.get("y2")), "x2, y2")
    scroll = data.get("scroll", (0, 0))
    try:
        scroll_pair = tuple(int(v) for v in np.asarray(scroll).reshape(-1))
    except (TypeError, ValueError):
        raise InvalidAction(f"scroll must be (dx, dy), got {scroll!r}") from None
    if len(scroll_pair) != 2:
        raise InvalidAction(f"scroll must be (dx, dy), got {scroll!r}")
    return Action(kind, point, end, data.get("text"), data.get("keys"), (scroll_pair[0], scroll_pair[1]),
                  data.get("meta"))


_CALL = re.compile(r"^\s*([a-z_]+)\s*\((.*)\)\s*$", re.S)


def from_string(text: str) -> Action:
    """An action in its string form (see `ActionKind.form`), e.g. `click(812, 44)`."""
    m = _CALL.match(text)
    if not m:
        raise InvalidAction(f"cannot parse action {text!r}")
    kind, args_src = m.groups()
    if kind not in ACTIONS:
        raise InvalidAction(f"unknown action type {kind!r}; known: {', '.join(ACTION_TYPES)}")
    try:
        args = ast.literal_eval(f"({args_src},)") if args_src.strip() else ()
    except (ValueError, SyntaxError):
        raise InvalidAction(f"cannot parse the arguments of {text!r}") from None
    nums = [a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)]
    strs = [a for a in args if isinstance(a, str)]
    try:
        fields = ACTIONS[kind].args(kind, nums, strs)
    except InvalidAction as exc:
        raise InvalidAction(f"{exc}: {text!r}") from None
    return from_mapping({"type": kind, **fields})


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
    if action.type not in ACTIONS:
        raise InvalidAction(f"unknown action type {action.type!r}; known: {', '.join(ACTION_TYPES)}")
    kind = ACTIONS[action.type]
    if kind.point and action.point is None:
        raise InvalidAction(f"{action.type} needs a point")
    if kind.end_point and action.end_point is None:
        raise InvalidAction(f"{action.type} needs an end point")
    if kind.text and not action.text:
        raise InvalidAction(f"{action.type} needs text")
    if kind.keys and not action.keys:
        raise InvalidAction(f"{action.type} needs keys")
    for name, p in (("point", action.point), ("end_point", action.end_point)):
        if p is not None and not (0 <= p[0] <= width - 1 and 0 <= p[1] <= height - 1):
            raise InvalidAction(f"{name} ({p[0]:g}, {p[1]:g}) is outside the "
                                f"{width}x{height} observation")
