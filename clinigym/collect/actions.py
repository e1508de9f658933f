"""The page's actions: checked and cleaned (HTTP 400 with the reason otherwise), and a
starting instruction suggested from the action and the element's text. The action types
are those of `clinigym.core.actions.ACTIONS`."""
from __future__ import annotations

from typing import Any

import numpy as np

from clinigym.collect import proposals as prop
from clinigym.collect.errors import ActionError
from clinigym.core.actions import ACTIONS

POINTER_ACTIONS = tuple(k for k, v in ACTIONS.items() if v.point)
MAX_TEXT = 500
MAX_SCROLL = 30


def parse_action(data: Any, width: int, height: int) -> dict:
    """A page action as a clean dict; ActionError (HTTP 400) with the reason otherwise."""
    if not isinstance(data, dict):
        raise ActionError("an action is a JSON object")
    kind = data.get("type")
    if kind not in ACTIONS:
        raise ActionError(f"unknown action type {kind!r}; known: {', '.join(ACTIONS)}")

    def point(xk: str, yk: str, name: str) -> list[int] | None:
        x, y = data.get(xk), data.get(yk)
        if x is None and y is None:
            return None
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) for v in (x, y)):
            raise ActionError(f"{name} must be two numbers ({xk}, {yk}), got {x!r}, {y!r}")
        if not (0 <= x <= width - 1 and 0 <= y <= height - 1):
            raise ActionError(f"{name} ({x:g}, {y:g}) is outside the {width}x{height} screen")
        return [int(round(x)), int(round(y))]

    action: dict[str, Any] = {"type": kind}
    p = point("x", "y", "point")
    if kind in POINTER_ACTIONS and p is None:
        raise ActionError(f"{kind} needs a point (x, y)")
    if p is not None:
        action["point"] = p
    if kind == "drag":
        end = point("x2", "y2", "end point")
        if end is None:
            raise ActionError("drag needs an end point (x2, y2)")
        if end == p:
            raise ActionError("drag needs an end point different from its start")
        action["end_point"] = end
    if kind == "type":
        text = data.get("text")
        if not isinstance(text, str) or not text:
            raise ActionError("type needs non-empty text")
        if len(text) > MAX_TEXT:
            raise ActionError(f"type text longer than {MAX_TEXT} characters")
        action["text"] = text
    if kind == "key":
        keys = data.get("keys")
        if not isinstance(keys, str) or not keys.strip():
            raise ActionError("key needs keys, e.g. 'ctrl+s'")
        action["keys"] = keys
    if kind == "scroll":
        dx, dy = data.get("dx", 0), data.get("dy", 0)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (dx, dy)):
            raise ActionError("scroll needs integer dx, dy (wheel notches)")
        if (dx, dy) == (0, 0) or max(abs(dx), abs(dy)) > MAX_SCROLL:
            raise ActionError(f"scroll needs dx or dy between -{MAX_SCROLL} and {MAX_SCROLL}, not zero")
        action["scroll"] = [dx, dy]
    return action


def suggest(action: dict, proposal: prop.Proposal) -> str:
    """A starting instruction from the action and the element's text."""
    label = (proposal.label or "").strip()
    kind = action["type"]
    if kind == "type":
        return f"Type '{action['text'].rstrip()}'" + (f" into '{label}'." if label else ".")
    if kind == "key":
        return f"Press {action['keys']}."
    if kind == "scroll":
        return "Scroll " + ("down" if action["scroll"][1] > 0 else "up") + (f" in '{label}'." if label else ".")
    verb = {"click": "Click on", "double_click": "Double click on", "right_click": "Right click on",
            "drag": "Drag", "hover": "Move the pointer over"}[kind]
    return f"{verb} '{label}'." if label else ""
