"""Scoring a predictions file against MedSPOT's real annotations, hand-computed.

Orthanc task 8 (Anonymize study), boxes in percent [x, y, w, h]:
step 1 [93.74, 37.54, 2.35, 4.53], step 2 [47.37, 32.7, 15.2, 3.49], step 3 [68.51, 67.39, 6.26, 4.78].
"""
import json

import pytest

from clinigym.eval.predictions import PredictionError, read_predictions, score_predictions
from clinigym.eval.scoring import metrics
from clinigym.spec.medspot import read_dataset
from conftest import medspot_annotations


@pytest.fixture(scope="module")
def task8():
    return [t for t in read_dataset(medspot_annotations()) if t.software == "Orthanc" and t.index == 8]


def write(tmp_path, lines):
    path = tmp_path / "preds.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return read_predictions(path)


def line(step, points, **kw):
    return {"software": "Orthanc", "task": 8, "step_id": step, "points": points, **kw}


def test_sequential_and_single_step(tmp_path, task8):
    preds = write(tmp_path, [
        line(1, [[0.949, 0.398]]),                   # inside step 1's box
        line(2, [[0.46, 0.34], [0.55, 0.34]]),       # first point just left of the box, second inside
        line(3, [[0.716, 0.70]]),                    # inside step 3's box
    ])
    (r,) = score_predictions(task8, preds)
    assert (r.n_steps, r.correct, r.steps_correct) == (3, 1, (True, False, True))
    # 1.5x box of step 2: centre x 0.5497, half width 0.114 -> from 0.4357: 0.46 is a near miss
    assert r.failure == "near_miss"
    m = metrics([r])
    assert m["tca"] == 0 and m["s1a"] == 1 and m["shr"] == pytest.approx(1 / 3)
    assert m["single_step_accuracy"] == pytest.approx(2 / 3)
    (k2,) = score_predictions(task8, preds, top_k=2)
    assert k2.correct == 3 and k2.failure is None


def test_pixel_relative_and_delta(tmp_path, task8):
    # step 1's box in pixels of 1000 x 1000: x 937.4-960.9, y 375.4-420.7
    preds = write(tmp_path, [
        line(1, [[935.0, 400.0]], coords="pixel", image_size=[1000, 1000]),   # 2.4 px left of it
        line(2, [[550, 340]], coords="relative1000", image_size=[1000, 1000]),
    ])
    (strict,) = score_predictions(task8, preds)
    assert strict.correct == 0
    (tolerant,) = score_predictions(task8, preds, delta=3)
    assert tolerant.correct == 2 and tolerant.failure == "no_prediction"   # step 3 has no line


def test_missing_and_outside_points_are_no_prediction(tmp_path, task8):
    (r,) = score_predictions(task8, write(tmp_path, [line(1, [[1.2, 0.5]])]))
    assert r.correct == 0 and r.failure == "no_prediction"
    (r,) = score_predictions(task8, {})
    assert r.failure == "no_prediction" and r.steps_correct == (False, False, False)


def test_bad_lines_named(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"software": "Orthanc", "task": 8}\n')
    with pytest.raises(PredictionError, match="p.jsonl:1"):
        read_predictions(path)
    path.write_text(json.dumps(line(1, [[1, 2]], coords="pixel")) + "\n")
    with pytest.raises(PredictionError, match="image_size"):
        read_predictions(path)
