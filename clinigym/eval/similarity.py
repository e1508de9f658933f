"""How alike two screens are, the one measure of `clinigym replay`, `clinigym validate` and
the scenarios' `screen` checks (the measure itself is in `clinigym.core.screen`).

- `identical`: the fraction of pixels whose three channels are all equal;
- `mad`: the mean absolute difference over all pixels and channels (0-255),
  reported to say *how* different a mismatching frame is;
- a frame matches when `identical >= threshold`, default 0.9999.

Why this measure and this threshold: the programs render deterministically
(fixed fonts, fixture data, dates and window geometry; caret blinking off), so
a faithful replay is bit-identical. We measured exactly 1.0 on every step of
the Orthanc and DICOMscope scenarios over repeated resets. The threshold only
has to absorb what the environment itself treats as noise (its settle rule
ignores changes of fewer than 40 pixels, e.g. a caret) while catching the
smallest real state change we saw: selecting a row in DICOMscope's browser
changes about 2,200 pixels, 0.106 % of a 1920x1080 frame, which the looser
0.999 (2,074 pixels) would only just catch. 0.9999 allows 207 pixels. A mean
difference alone would hide such a small change in the average, which is why
it is reported but not used for the decision.

Both leave out the scenario's `wall_clock` boxes (`wall_clock_mask`), where the program
shows the time of the run.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from PIL import Image

from clinigym.core.geometry import Box, Coordinates
from clinigym.core.screen import DEFAULT_THRESHOLD, Similarity, similarity

__all__ = ["DEFAULT_THRESHOLD", "Similarity", "load_rgb", "pixel_bounds", "similarity", "wall_clock_mask"]

def load_rgb(path: Path, size: tuple[int, int] | None = None) -> np.ndarray:
    """A PNG as RGB uint8, resized (bilinear, as the environments do) to `size` = (w, h)."""
    with Image.open(path) as img:
        img = img.convert("RGB")
        if size is not None and img.size != tuple(size):
            img = img.resize(tuple(size), Image.BILINEAR)
        return np.asarray(img, dtype=np.uint8)


def pixel_bounds(box, width: int, height: int) -> tuple[int, int, int, int]:
    """A float box as slice bounds (x1, y1, x2, y2; end exclusive) inside the image."""
    return (max(0, math.floor(box.x1)), max(0, math.floor(box.y1)),
            min(width, math.ceil(box.x2)), min(height, math.ceil(box.y2)))


def wall_clock_mask(scenario, coords: Coordinates) -> np.ndarray:
    """The observation pixels where the scenario says the program shows the time of day
    (its `wall_clock` boxes, screen pixels): what replay and validate leave out."""
    w, h = coords.obs_w, coords.obs_h
    mask = np.zeros((h, w), bool)
    for box in scenario.wall_clock:
        x1, y1, x2, y2 = pixel_bounds(coords.box_to_obs(Box(*box)), w, h)
        mask[y1:y2, x1:x2] = True
    return mask
