"""The judging rules, each written once for every environment: PROTOCOL.md's hit test,
target size and failure taxonomy, an action against a step (point, drag end, type and
text), and the action budget.

Boxes are (x1, y1, x2, y2) in pixels with inclusive edges; points are (x, y).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from clinigym.core.actions import Action
from clinigym.core.geometry import Box

SMALL_AREA = 4e-4
LARGE_AREA = 3e-3
NEAR_MISS_SCALE = 1.5
EDGE_BAND = 0.05
TOOLBAR_BAND = 0.12

FAILURE_TYPES = ("no_prediction", "small_target", "near_miss", "edge_bias",
                 "toolbar_confusion", "far_miss")
# Live-only outcomes (wrong_action_type, no_transition, app_crashed, timeout) are not
# grounding failures of the agent: scoring counts them apart (PROTOCOL.md).
LIVE_OUTCOMES = ("wrong_action_type", "no_transition", "app_crashed", "timeout")
# Episodes may take this many times the actions their reference path takes (MedCUA gives
# agents several times the steps a task needs; recovery and the static mode use the same).
BUDGET_FACTOR = 3


def hit(point: Sequence[float], box: Box, delta: float = 0.0) -> bool:
    """The point is in the box, or its square of half-side `delta` touches the box."""
    px, py = point
    return (box.x1 - delta <= px <= box.x2 + delta) and (box.y1 - delta <= py <= box.y2 + delta)


def hit_any(points: Iterable[Sequence[float]], box: Box, delta: float = 0.0, top_k: int = 1) -> bool:
    return any(hit(p, box, delta) for p in list(points)[:top_k])


def target_size(box: Box, width: int, height: int) -> str:
    a = box.area / (width * height)
    if a < SMALL_AREA:
        return "small"
    return "medium" if a < LARGE_AREA else "large"


def failure_type(point: Sequence[float] | None, box: Box, width: int, height: int) -> str:
    """Label of a step that ended a task; the first matching rule wins."""
    if point is None:
        return "no_prediction"
    if box.area / (width * height) < SMALL_AREA:
        return "small_target"
    px, py = point
    cx, cy = (box.x1 + box.x2) / 2, (box.y1 + box.y2) / 2
    hw = (box.x2 - box.x1) * NEAR_MISS_SCALE / 2
    hh = (box.y2 - box.y1) * NEAR_MISS_SCALE / 2
    near = Box(max(0.0, cx - hw), max(0.0, cy - hh), min(float(width), cx + hw), min(float(height), cy + hh))
    if near.contains(px, py):
        return "near_miss"
    nx, ny = px / width, py / height
    if nx < EDGE_BAND or nx > 1 - EDGE_BAND or ny < EDGE_BAND or ny > 1 - EDGE_BAND:
        return "edge_bias"
    if ny < TOOLBAR_BAND:
        return "toolbar_confusion"
    return "far_miss"


def judge_action(action: Action, point: Sequence[float], expected: str, text: str | None,
                 target: Box, end_box: Box | None) -> tuple[bool, bool]:
    """(hit, action type right) of an action against a step whose action is `expected`:
    `point` (the action's, or the pointer's for one without) in the target; a drag must also
    end in `end_box`; a type action must type the step's `text` exactly."""
    hit_ = hit(point, target)
    if expected == "drag":
        hit_ = hit_ and action.end_point is not None and end_box is not None and hit(action.end_point, end_box)
    type_ok = action.type == expected and (expected != "type" or (action.text or "") == text)
    return hit_, type_ok


def action_budget(reference_actions: int, factor: int, given: int | None = None) -> int:
    """The most actions an episode may take: `given`, else `factor` times the actions of the
    reference path."""
    budget = given or factor * reference_actions
    if budget < 1:
        raise ValueError(f"the action budget must be at least 1, not {budget}")
    return budget


def budget_spent(actions: int, budget: int) -> bool:
    """The episode has taken every action its budget allows (the last one included)."""
    return actions >= budget
