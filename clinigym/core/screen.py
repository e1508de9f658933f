"""Screenshots as grabbed, and how two of them differ."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clinigym.core.geometry import Box


@dataclass(frozen=True)
class Frame:
    """One screenshot as grabbed (BGRA); RGB is made only when asked for."""
    bgra: np.ndarray
    t: float

    @property
    def raw(self) -> np.ndarray:
        """One uint32 per pixel, for cheap comparison."""
        return self.bgra.view(np.uint32)[:, :, 0]

    @property
    def rgb(self) -> np.ndarray:
        return np.ascontiguousarray(self.bgra[:, :, 2::-1])


def changed_pixels(a: np.ndarray, b: np.ndarray) -> int:
    return int(np.count_nonzero(a != b))


def region_changed(before: Frame, after: Frame, box: Box, min_changed: int) -> bool:
    """More than `min_changed` pixels of the box differ between the two frames."""
    h, w = before.raw.shape
    x1, y1 = max(0, int(box.x1)), max(0, int(box.y1))
    x2, y2 = min(w, int(np.ceil(box.x2)) + 1), min(h, int(np.ceil(box.y2)) + 1)
    return changed_pixels(before.raw[y1:y2, x1:x2], after.raw[y1:y2, x1:x2]) > min_changed
