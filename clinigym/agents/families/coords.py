"""Coordinate conventions: from a family's native numbers to observation pixels and back.

Two kinds of native coordinates cover every family here:

- pixels of the image *as sent* (``scale=None``): UI-TARS-1.5 and Qwen2.5-VL answer
  in pixels of the smart-resized image, GPT-4o/GPT-5 and OpenAI computer use in
  pixels of the size stated in the prompt or tool (the image as sent);
- relative coordinates on ``[0, scale]`` of each side (``scale=1000`` for Qwen2-VL,
  Qwen3-VL, UI-TARS v1, OS-Atlas, UGround-V1, CogAgent; ``scale=1`` for SeeClick and
  Aguvis), which do not depend on any resize.

Observation pixels follow the project's contract (PROTOCOL.md, "Coordinates"): origin
top-left, a point is valid when ``0 <= x <= w-1 and 0 <= y <= h-1`` (the rule of
``clinigym.core.actions.validate``); outside points are dropped, never clamped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

Size = tuple[int, int]            # (width, height)
Point = tuple[float, float]


def inside(point: Point, size: Size) -> bool:
    x, y = point
    w, h = size
    return math.isfinite(x) and math.isfinite(y) and 0 <= x <= w - 1 and 0 <= y <= h - 1


def centre(values: tuple[float, ...]) -> Point:
    """A point (x, y) or the centre of a box (x1, y1, x2, y2)."""
    if len(values) == 2:
        return float(values[0]), float(values[1])
    x1, y1, x2, y2 = values
    return (x1 + x2) / 2, (y1 + y2) / 2


@dataclass(frozen=True)
class Space:
    """A native coordinate convention: ``scale`` units per image side (None: pixels
    of the image as sent), written with ``decimals`` decimals and zero-padded to
    ``pad`` digits."""
    scale: float | None = None
    decimals: int = 0
    pad: int = 0

    def _units(self, sent: Size) -> tuple[float, float]:
        """Native units per image side."""
        if self.scale is None:
            return float(sent[0]), float(sent[1])
        return float(self.scale), float(self.scale)

    def to_observation(self, point: Point, obs: Size, sent: Size) -> Point:
        ux, uy = self._units(sent)
        return point[0] / ux * obs[0], point[1] / uy * obs[1]

    def from_observation(self, point: Point, obs: Size, sent: Size) -> Point:
        """Exact (unrounded) native coordinates of an observation point."""
        ux, uy = self._units(sent)
        return point[0] / obs[0] * ux, point[1] / obs[1] * uy

    def quantum(self, obs: Size, sent: Size) -> Point:
        """Observation pixels per smallest native step (the family's resolution)."""
        ux, uy = self._units(sent)
        step = 10.0 ** -self.decimals
        return obs[0] / ux * step, obs[1] / uy * step

    def quantise(self, point: Point, obs: Size, sent: Size) -> Point:
        """Native coordinates at the family's precision, as the model would write
        them. A point inside the observation stays inside after the round trip (at
        the far edge the value is rounded down instead of to nearest)."""
        native = self.from_observation(point, obs, sent)
        step = 10.0 ** -self.decimals
        out = []
        for axis, v in enumerate(native):
            q = round(round(v / step) * step, self.decimals)
            if 0 <= point[axis] <= obs[axis] - 1:
                back = self.to_observation((q, q), obs, sent)[axis]
                if back > obs[axis] - 1:
                    q = round(math.floor(v / step) * step, self.decimals)
            out.append(q)
        return out[0], out[1]

    def text(self, value: float) -> str:
        """A native value as the model writes it: ``935``, ``086``, ``0.17``."""
        if self.decimals == 0:
            return f"{round(value):0{self.pad}d}" if self.pad else str(round(value))
        return f"{value:.{self.decimals}f}"


PIXELS = Space()                          # pixels of the image as sent
REL_1000 = Space(scale=1000)              # [0, 1000) / [0, 1000] of each side
REL_1000_PADDED = Space(scale=1000, pad=3)   # CogAgent writes 000..999
NORM_2 = Space(scale=1, decimals=2)       # SeeClick: "(0.17,0.06)"
NORM_4 = Space(scale=1, decimals=4)       # Aguvis: "pyautogui.click(x=0.1175, y=0.0725)"
