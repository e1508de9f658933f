"""Boxes and the coordinate contract.

**Action coordinates are pixels of the observation image** (origin top-left, x right,
y down). The environment maps them to screen pixels in one place, `Coordinates`,
and states the contract in every `info["coordinates"]` (`Coordinates.info`).
Boxes are (x1, y1, x2, y2) in pixels with inclusive edges; points are (x, y).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Box:
    x1: float
    y1: float
    x2: float
    y2: float

    @classmethod
    def from_percent(cls, x: float, y: float, w: float, h: float, width: int, height: int) -> Box:
        """MedSPOT's `[x, y, w, h]` in percent of the image to pixels."""
        return cls(x / 100 * width, y / 100 * height, (x + w) / 100 * width, (y + h) / 100 * height)

    @property
    def center(self) -> tuple[int, int]:
        return int(round((self.x1 + self.x2) / 2)), int(round((self.y1 + self.y2) / 2))

    @property
    def area(self) -> float:
        return max(0.0, self.x2 - self.x1) * max(0.0, self.y2 - self.y1)

    def as_list(self) -> list[float]:
        return [self.x1, self.y1, self.x2, self.y2]

    def contains(self, x: float, y: float) -> bool:
        return self.x1 <= x <= self.x2 and self.y1 <= y <= self.y2


def coordinates_info(obs_w: int, obs_h: int, screen_w: int, screen_h: int) -> dict[str, Any]:
    """The coordinate contract, as every `info` states it."""
    return {"space": "observation_pixels", "origin": "top_left",
            "observation_size": [obs_w, obs_h], "screen_size": [screen_w, screen_h],
            "scale": [screen_w / obs_w, screen_h / obs_h]}


@dataclass(frozen=True)
class Coordinates:
    """Observation pixels <-> screen pixels."""
    obs_w: int
    obs_h: int
    screen_w: int
    screen_h: int

    @property
    def scale(self) -> tuple[float, float]:
        return self.screen_w / self.obs_w, self.screen_h / self.obs_h

    def to_screen(self, point: tuple[float, float]) -> tuple[int, int]:
        sx, sy = self.scale
        return min(self.screen_w - 1, int(point[0] * sx)), min(self.screen_h - 1, int(point[1] * sy))

    def to_obs(self, point: tuple[float, float]) -> tuple[float, float]:
        sx, sy = self.scale
        return point[0] / sx, point[1] / sy

    def box_to_obs(self, box: Box) -> Box:
        sx, sy = self.scale
        return Box(box.x1 / sx, box.y1 / sy, box.x2 / sx, box.y2 / sy)

    def info(self) -> dict[str, Any]:
        return coordinates_info(self.obs_w, self.obs_h, self.screen_w, self.screen_h)
