"""Quality flags of a demonstrated step, shown before it is saved.

- `click_outside_box`: the action's point (or a drag's end point) is not in the accepted box;
- `box_too_large`: the accepted box covers more than 25% of the screen;
- `empty_instruction`: no instruction;
- `no_screen_change`: the settled screen after the action differs from the one before by
  no more pixels than the program's settle rule ignores (`settle.min_changed`).
"""
from __future__ import annotations

from collections.abc import Sequence

from clinigym.collect.boxes import area_fraction, contains

MAX_BOX_FRACTION = 0.25
FLAGS = {
    "click_outside_box": "the action's point is outside the accepted box",
    "box_too_large": f"the box covers more than {MAX_BOX_FRACTION:.0%} of the screen",
    "empty_instruction": "the instruction is empty",
    "no_screen_change": "the screen did not change after the action",
}


def validate_box(box, width: int, height: int) -> list[float]:
    """A box from the page as four floats inside the screen with x1 < x2, y1 < y2; ValueError else."""
    if not isinstance(box, (list, tuple)) or len(box) != 4:
        raise ValueError("box must be [x1, y1, x2, y2]")
    try:
        x1, y1, x2, y2 = (float(v) for v in box)
    except (TypeError, ValueError):
        raise ValueError("box must be four numbers") from None
    if not (x1 < x2 and y1 < y2):
        raise ValueError("box must have x1 < x2 and y1 < y2")
    if x1 < 0 or y1 < 0 or x2 > width or y2 > height:
        raise ValueError(f"box {[x1, y1, x2, y2]} is outside the {width}x{height} screen")
    return [x1, y1, x2, y2]


def step_flags(action: dict, box: Sequence[float], instruction: str | None, changed_pixels: int,
               min_changed: int, width: int, height: int, end_box: Sequence[float] | None = None) -> list[str]:
    flags = []
    point = action.get("point")
    if point is not None and not contains(box, point):
        flags.append("click_outside_box")
    elif action.get("type") == "drag" and end_box is not None and action.get("end_point") is not None \
            and not contains(end_box, action["end_point"]):
        flags.append("click_outside_box")
    if area_fraction(box, width, height) > MAX_BOX_FRACTION:
        flags.append("box_too_large")
    if not (instruction or "").strip():
        flags.append("empty_instruction")
    if changed_pixels <= min_changed:
        flags.append("no_screen_change")
    return flags


def describe(flags: Sequence[str]) -> list[str]:
    return [f"{f}: {FLAGS.get(f, f)}" for f in flags]
