"""The measures replay and validate share (pure, exact values): how alike two screens are,
which pixels are left out, where a piece of one screen is on another, the scenario map, and
how a recorded task is found and re-created."""
from __future__ import annotations

import json

import numpy as np
import pytest

from clinigym.core.geometry import Coordinates
from clinigym.eval.similarity import Similarity, similarity, wall_clock_mask
from clinigym.eval.validate import grow, load_scenario_map, locate, pixel_box, validate_dataset
from clinigym.spec.medspot import GroundTruth, MedspotStep, MedspotTask, write_dataset

ORTHANC = "orthanc/open-patient-study"


def test_similarity_measure():
    a = np.zeros((100, 100, 3), np.uint8)
    b = a.copy()
    assert similarity(a, b).identical == 1.0 and similarity(a, b).matches()
    b[0, :2] = (255, 0, 0)          # 2 of 10,000 pixels differ: 0.9998 identical
    s = similarity(a, b)
    assert s.differing == 2 and s.identical == pytest.approx(0.9998)
    assert not s.matches() and s.matches(0.999)
    assert s.mad == pytest.approx(2 * 255 / (100 * 100 * 3))
    ignore = np.zeros((100, 100), bool)
    ignore[0, 0] = True             # one of the two left out: 1 of 9,999 differs
    s = similarity(a, b, ignore)
    assert s.differing == 1 and s.identical == pytest.approx(9998 / 9999)
    assert s.mad == pytest.approx(255 / (9999 * 3))
    ignore[0, 1] = True
    assert similarity(a, b, ignore) == Similarity(1.0, 0.0, 0)
    assert similarity(a, b, np.ones((100, 100), bool)) == Similarity(1.0, 0.0, 0)


def test_wall_clock_boxes_in_observation_pixels_and_grown_masks():
    class Scenario:
        wall_clock = [[100, 50, 300, 70]]
    mask = wall_clock_mask(Scenario(), Coordinates(960, 540, 1920, 1080))
    assert mask.shape == (540, 960) and mask.sum() == 100 * 10
    assert mask[25, 50] and mask[34, 149] and not mask[35, 50] and not mask[25, 150]
    one = np.zeros((5, 5), bool)
    one[2, 2] = True
    assert grow(one).sum() == 9 and grow(one)[1:4, 1:4].all()
    edge = np.zeros((3, 3), bool)
    edge[0, 0] = True
    assert grow(edge).sum() == 4


def test_locate_finds_content_and_its_offset():
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, (120, 200, 3), dtype=np.uint8)
    content = frame[40:60, 70:110].copy()
    assert locate(content, frame, (70, 40)).offset == 0
    moved = locate(content, frame, (50, 37))           # the box says 20 px left, 3 px up
    assert moved.found and (moved.dx, moved.dy) == (20, 3)
    assert locate(np.full((20, 40, 3), 200, np.uint8), frame, (0, 0)) is None   # uniform
    other = rng.integers(0, 256, (20, 40, 3), dtype=np.uint8)
    assert not locate(other, frame, (70, 40)).found


def test_scenario_map_files_and_unknown_tasks(tmp_path):
    (tmp_path / "map.yaml").write_text("orthanc/0: orthanc/open-patient-study\n")
    (tmp_path / "map.json").write_text(json.dumps({"orthanc/0": ORTHANC}))
    expected = {"orthanc/0": ORTHANC}
    assert load_scenario_map(tmp_path / "map.yaml") == load_scenario_map(tmp_path / "map.json") == expected
    step = MedspotStep(1, "Images/x.png", "Click.", (GroundTruth("click", "", (1, 1, 5, 5)),))
    write_dataset([MedspotTask("orthanc", 0, "Task.", (step,))], tmp_path / "ds")
    with pytest.raises(ValueError, match="orthanc/7"):
        validate_dataset(tmp_path / "ds", {"orthanc/7": ORTHANC})
    report = validate_dataset(tmp_path / "ds", None)   # no scenario named: nothing runs
    assert report.skipped == ["orthanc/0"] and report.tasks == []


def test_an_exported_box_comes_back_in_whole_pixels():
    """The export writes percentages; at the keyframe's size the box is the recorded one again
    and its centre the recorded point (float error once put it 1 px off: 395 for 396)."""
    from clinigym.core.geometry import Box
    recorded = Box(325, 385, 1916, 406)
    bbox = (325 / 1920 * 100, 385 / 1080 * 100, (1916 - 325) / 1920 * 100, (406 - 385) / 1080 * 100)
    assert Box.from_percent(*bbox, 1920, 1080).center == (1120, 395)   # the float error
    assert pixel_box(bbox, 1920, 1080) == recorded
    assert pixel_box(bbox, 1920, 1080).center == recorded.center == (1120, 396)


def test_a_family_task_is_re_created_from_its_instance_and_split():
    """A recording or an exported task names a scenario or a task family (by key or file); a
    family's is re-created from the instance and split recorded with it, never without them."""
    from clinigym.eval.replay import episode_start, find_task
    from clinigym.spec.task_families import select_families
    [family] = select_families("orthanc/protect-patient-lookalikes")
    scenario = find_task(ORTHANC)
    assert scenario.key == ORTHANC and find_task("moved/elsewhere", str(scenario.path)).key == ORTHANC
    assert find_task(family.key) is family and find_task("moved/elsewhere", str(family.path)) is family
    assert episode_start(family, 0, 1234, "test") == (1234, "test")
    assert episode_start(scenario, 7, None, None) == (7, None)
    with pytest.raises(ValueError, match="its instance"):
        episode_start(family, 0, None, "test")
    with pytest.raises(ValueError, match="no scenario or task family"):
        find_task("orthanc/no-such-task")
