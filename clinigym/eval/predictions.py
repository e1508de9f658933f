"""Scoring a predictions file against a MedSPOT-format dataset, with the one rule set
of MedSPOT's protocol (docs/protocols/medspot.md), so that runs of other evaluation scripts can be compared.

The file is JSON Lines, one object per predicted step::

    {"software": "Orthanc", "task": 8, "step_id": 1,
     "points": [[0.52, 0.41], [0.10, 0.20]],       # or "point": [x, y]; best first (top-K)
     "coords": "normalized",                      # normalized [0,1] | relative1000 [0,1000] | pixel
     "image_size": [1920, 1080],                  # needed for pixel coords and for delta
     "raw": "click(start_box='(520,410)')"}       # optional: the model's text

A step with no line, no point, or a point outside the image is `no_prediction`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from clinigym.core import judge
from clinigym.core.errors import DataError
from clinigym.eval.scoring import TaskResult, categorize
from clinigym.spec.medspot import MedspotTask

COORDS = ("normalized", "relative1000", "pixel")


class PredictionError(DataError):
    pass


@dataclass(frozen=True)
class Prediction:
    points: tuple[tuple[float, float], ...]   # normalised to [0, 1]
    image_size: tuple[int, int] | None
    raw: str | None = None


def _normalise(obj: dict, where: str) -> Prediction:
    coords = obj.get("coords", "normalized")
    if coords not in COORDS:
        raise PredictionError(f"{where}: coords must be one of {', '.join(COORDS)}, got {coords!r}")
    raw_points = obj.get("points")
    if raw_points is None:
        raw_points = [obj["point"]] if obj.get("point") is not None else []
    size = tuple(obj["image_size"]) if obj.get("image_size") else None
    if coords == "pixel" and size is None:
        raise PredictionError(f"{where}: pixel coordinates need image_size")
    scale = {"normalized": (1, 1), "relative1000": (1000, 1000)}.get(coords) or size
    points = []
    for p in raw_points:
        if not (isinstance(p, (list, tuple)) and len(p) == 2):
            raise PredictionError(f"{where}: a point is [x, y], got {p!r}")
        points.append((float(p[0]) / scale[0], float(p[1]) / scale[1]))
    return Prediction(tuple(points), size, obj.get("raw"))


def read_predictions(path: Path) -> dict[tuple[str, int, int], Prediction]:
    out = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            obj = json.loads(line)
            key = (str(obj["software"]), int(obj["task"]), int(obj["step_id"]))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise PredictionError(f"{where}: needs JSON with software, task, step_id ({exc})") from None
        out[key] = _normalise(obj, where)
    return out


def score_predictions(tasks: list[MedspotTask], preds: dict[tuple[str, int, int], Prediction],
                      delta: float = 0.0, top_k: int = 1) -> list[TaskResult]:
    """Sequential (first-error) results, with every step also judged alone (single-step)."""
    results = []
    for task in tasks:
        steps = [s for s in task.steps if s.scorable]
        oks, failure, sizes = [], None, []
        for step in steps:
            pred = preds.get((task.software, task.index, step.step_id))
            w, h = pred.image_size if pred and pred.image_size else (1, 1)
            if delta and pred and not pred.image_size:
                raise PredictionError(f"{task.key} step {step.step_id}: delta needs image_size")
            box = step.actions[0].box(w, h)
            points = [(x * w, y * h) for x, y in (pred.points if pred else ())
                      if 0 <= x <= 1 and 0 <= y <= 1]
            ok = judge.hit_any(points, box, delta, top_k)
            oks.append(ok)
            if failure is None and not all(oks):
                failure = judge.failure_type(points[0] if points else None, box, w, h)
                sizes.append((judge.target_size(box, w, h), False))
            elif failure is None:
                sizes.append((judge.target_size(box, w, h), True))
        correct = next((i for i, ok in enumerate(oks) if not ok), len(oks))
        results.append(TaskResult(task.software, task.key, len(steps), correct, failure, tuple(sizes),
                                  category=categorize(task.overview), steps_correct=tuple(oks)))
    return results
