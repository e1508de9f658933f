"""Box arithmetic for boxes `[x1, y1, x2, y2]` (screen pixels, as `clinigym.core.geometry.Box`):
pure, so that the agreement command and the writer need no image library."""
from __future__ import annotations

from collections.abc import Sequence


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two boxes [x1, y1, x2, y2] (areas as `Box.area`)."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def area_fraction(box: Sequence[float], width: int, height: int) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1]) / (width * height)


def contains(box: Sequence[float], point: Sequence[float], margin: float = 0.0) -> bool:
    return box[0] - margin <= point[0] <= box[2] + margin and box[1] - margin <= point[1] <= box[3] + margin
