"""PROTOCOL.md's step rules: the hit test, target size and the failure taxonomy.

Boxes are (x1, y1, x2, y2) in pixels with inclusive edges; points are (x, y).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

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
