"""Where a piece of one screen is on another: normalised cross-correlation of a template at
every place, computed with FFTs (`clinigym validate`'s content check)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MIN_MATCH_SCORE = 0.9       # normalised cross-correlation for "found"
TIE = 1e-3                  # scores this close to the peak count as the peak


@dataclass(frozen=True)
class TemplateMatch:
    found: bool
    score: float   # the peak normalised cross-correlation, -1..1
    dx: int        # best place minus the box's top-left corner, live pixels
    dy: int

    @property
    def offset(self) -> float:
        return math.hypot(self.dx, self.dy)


def _window_sums(a: np.ndarray, h: int, w: int) -> np.ndarray:
    """Sums of every h x w window (integral image; exact in int64)."""
    s = np.zeros((a.shape[0] + 1, a.shape[1] + 1), np.int64)
    s[1:, 1:] = a.cumsum(0).cumsum(1)
    return s[h:, w:] - s[:-h, w:] - s[h:, :-w] + s[:-h, :-w]


def ncc_map(image: np.ndarray, templ: np.ndarray) -> np.ndarray | None:
    """Normalised cross-correlation of a grey template at every place it fits in a grey
    image (int arrays); None when the template is uniform, which matches anywhere."""
    H, W = image.shape
    h, w = templ.shape
    t = templ - templ.mean()
    t_energy = float((t * t).sum())
    if t_energy < 1e-6 * h * w:
        return None
    # sum(I * t) over each window, for all windows at once; t has zero mean, so this is
    # the covariance numerator. No wrap-around: valid windows never cross the border.
    corr = np.fft.irfft2(np.fft.rfft2(image) * np.conj(np.fft.rfft2(t, s=(H, W))), s=(H, W))
    corr = corr[:H - h + 1, :W - w + 1]
    n = h * w
    s1 = _window_sums(image, h, w)
    s2 = _window_sums(image * image, h, w)
    spread = np.sqrt((n * s2 - s1 * s1).astype(np.float64) / n)   # sqrt(sum((I - mean)^2))
    denom = spread * math.sqrt(t_energy)
    return np.divide(corr, denom, out=np.zeros_like(corr), where=denom > 1e-6)


def _grey(rgb: np.ndarray) -> np.ndarray:
    return rgb.astype(np.int64).sum(axis=2)


def locate(content: np.ndarray, frame: np.ndarray, at: tuple[int, int]) -> TemplateMatch | None:
    """Where `content` (RGB) is in `frame` (RGB), relative to `at` (x, y of where it was
    cut out). None when the content is too small or uniform to be located."""
    if content.shape[0] < 4 or content.shape[1] < 4:
        return None
    ncc = ncc_map(_grey(frame), _grey(content))
    if ncc is None:
        return None
    y, x = np.unravel_index(int(np.argmax(ncc)), ncc.shape)
    score = float(ncc[y, x])
    ax, ay = at
    # Among equally good places (a repeated icon, identical rows) prefer the box itself.
    if ay < ncc.shape[0] and ax < ncc.shape[1] and ncc[ay, ax] >= score - TIE:
        x, y = ax, ay
    return TemplateMatch(score >= MIN_MATCH_SCORE, score, int(x - ax), int(y - ay))
