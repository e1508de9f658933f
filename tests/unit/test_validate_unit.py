"""`clinigym validate` on the real programs: a dataset exported from oracle runs is
perfectly faithful to the live programs; faults injected into copies of it (a
shifted box, a keyframe of another step, a click on nothing) are each flagged
on the right step with the right reason."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from clinigym.cli.main import build_parser
from clinigym.eval.validate import load_scenario_map, locate, validate_dataset
from clinigym.spec.medspot import GroundTruth, MedspotStep, MedspotTask, read_dataset, write_dataset
from clinigym.spec.scenarios import all_scenarios

SCENARIOS = {s.key: s for s in all_scenarios()}
ORTHANC, DICOMSCOPE = "orthanc/open-patient-study", "dicomscope/medspot-09-view-image"


def cli(*argv: str) -> int:
    args = build_parser().parse_args(list(argv))
    return args.func(args)


def task_key(dataset: Path, scenario: str) -> str:
    return next(t.key for t in read_dataset(dataset) if t.extra["clinigym"]["scenario"] == scenario)


def edit_annotation(folder: Path, key: str, change) -> None:
    software, index = key.split("/")
    path = folder / f"{software}_Annotation.json"
    data = json.loads(path.read_text())
    change(data["tasks"][int(index)]["steps"])
    path.write_text(json.dumps(data))


# -- without the live programs ------------------------------------------------------------
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


def test_help(capsys):
    with pytest.raises(SystemExit) as exc:
        cli("validate", "--help")
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "usage: clinigym validate" in out and "--scenario-map" in out and "--json" in out


# -- on the live programs -----------------------------------------------------------------


def shift_box(steps):          # (a) the box moved right by 10 % of the width
    steps[1]["actions"][0]["bbox"][0] += 10


def box_on_nothing(steps):     # (c) the box on an empty area: the click changes nothing
    steps[1]["actions"][0]["bbox"] = [40, 50, 3, 2]


def keyframe_of_another_step(folder: Path, steps):   # (b)
    shutil.copyfile(folder / steps[2]["image_path"], folder / steps[1]["image_path"])


FAULTS = {
    "shifted-box": (ORTHANC, shift_box, "ground-truth box 192 px from the live target"),
    "keyframe-of-another-step": (ORTHANC, keyframe_of_another_step, "keyframe differs from live screen"),
    "click-on-nothing": (DICOMSCOPE, box_on_nothing, "no transition after the ground-truth action"),
}


