"""How alike two screens are, the one measure of `clinigym replay` and `clinigym validate`.

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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from clinigym.core.geometry import Box, Coordinates

DEFAULT_THRESHOLD = 0.9999


@dataclass(frozen=True)
class Similarity:
    identical: float   # fraction of pixels with all channels equal
    mad: float         # mean absolute difference, 0-255
    differing: int     # number of pixels that differ

    def matches(self, threshold: float = DEFAULT_THRESHOLD) -> bool:
        return self.identical >= threshold


def similarity(a: np.ndarray, b: np.ndarray, ignore: np.ndarray | None = None) -> Similarity:
    """Two RGB images of the same size (H x W x 3, uint8); pixels where the boolean H x W
    mask `ignore` is set are left out of every figure."""
    if a.shape != b.shape:
        raise ValueError(f"images of different sizes: {a.shape} and {b.shape}")
    keep = np.ones(a.shape[:2], bool) if ignore is None else ~ignore
    if not keep.any():
        return Similarity(1.0, 0.0, 0)
    same = np.all(a == b, axis=-1)[keep]
    mad = float(np.abs(a.astype(np.int16) - b.astype(np.int16))[keep].mean())
    return Similarity(float(same.mean()), mad, int(same.size - same.sum()))


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
