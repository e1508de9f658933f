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

from clinigym.envs import ground_truth
from clinigym.envs.steps import StepsEnv
from clinigym.eval.export import to_medspot
from clinigym.eval.validate import validate_dataset, validate_task
from clinigym.spec.medspot import read_dataset
from clinigym.spec.scenarios import all_scenarios, select
from conftest import cli

SCENARIOS = {s.key: s for s in all_scenarios()}
ORTHANC, DICOMSCOPE = "orthanc/open-patient-study", "dicomscope/medspot-09-view-image"




def record_oracle(scenario, backend, run: Path) -> None:
    env = StepsEnv(scenario, backend=backend, record_dir=run, agent_name="oracle")
    env.reset(seed=0)
    while True:
        _, reward, terminated, truncated, info = env.step(ground_truth(env).action())
        assert reward == 1.0, info
        if terminated or truncated:
            break
    env.close()


@pytest.fixture(scope="module")
def dataset(backends, tmp_path_factory) -> Path:
    """Oracle episodes of an Orthanc and a DICOMscope scenario, exported to MedSPOT format."""
    run = tmp_path_factory.mktemp("run")
    for key in (ORTHANC, DICOMSCOPE):
        record_oracle(SCENARIOS[key], backends(SCENARIOS[key].app), run)
    out = tmp_path_factory.mktemp("dataset")
    tasks = to_medspot([run], out)
    assert sorted(t.extra["clinigym"]["scenario"] for t in tasks) == [DICOMSCOPE, ORTHANC]
    return out


def task_key(dataset: Path, scenario: str) -> str:
    from clinigym.spec.medspot import read_dataset
    return next(t.key for t in read_dataset(dataset) if t.extra["clinigym"]["scenario"] == scenario)


def edit_annotation(folder: Path, key: str, change) -> None:
    software, index = key.split("/")
    path = folder / f"{software}_Annotation.json"
    data = json.loads(path.read_text())
    change(data["tasks"][int(index)]["steps"])
    path.write_text(json.dumps(data))


# -- without the live programs ------------------------------------------------------------


# -- on the live programs -----------------------------------------------------------------
@pytest.mark.live
def test_exported_dataset_is_perfectly_faithful(dataset, backends):
    report = validate_dataset(dataset, None, backends)
    assert report.flagged == 0, [(t.task, s.step_id, s.flags) for t in report.tasks for s in t.steps]
    assert report.skipped == [] and sorted(t.scenario for t in report.tasks) == [DICOMSCOPE, ORTHANC]
    assert report.fidelity() == 1.0 and report.per_program() == {"dicomscope": 1.0, "orthanc": 1.0}
    for task in report.tasks:
        assert task.fidelity == 1.0 and len(task.steps) == 3
        for s in task.steps:
            assert s.frame.identical == 1.0 and s.region.identical == 1.0
            assert s.template.found and s.template.offset == 0
            assert s.box_offset < 1 and s.hit and s.transition_seen and s.correct


@pytest.mark.live
def test_cli_with_a_scenario_map(dataset, tmp_path, capsys):
    key = task_key(dataset, ORTHANC)
    (tmp_path / "map.yaml").write_text(f"{key}: {ORTHANC}\n")
    assert cli("validate", str(dataset), "--scenario-map", str(tmp_path / "map.yaml")) == 0
    out = capsys.readouterr().out
    assert "100.0%" in out and "(0 flagged)" in out and "skipped (no live scenario)" in out


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


@pytest.mark.live
@pytest.mark.parametrize("fault", FAULTS)
def test_injected_fault_is_flagged(fault, dataset, backends, tmp_path, capsys):
    scenario, inject, reason = FAULTS[fault]
    copy = tmp_path / "dataset"
    shutil.copytree(dataset, copy)
    key = task_key(copy, scenario)
    if inject is keyframe_of_another_step:
        edit_annotation(copy, key, lambda steps: inject(copy, steps))
    else:
        edit_annotation(copy, key, inject)
    report = validate_dataset(copy, {key: scenario}, backends)
    [task] = report.tasks
    flags = [s.flags for s in task.steps]
    # Only the faulted step (the second) is flagged: the third is checked after recovery.
    assert not flags[0] and not flags[2], flags
    assert any(f.startswith(reason) for f in flags[1]), flags[1]
    assert task.fidelity == pytest.approx(2 / 3) and report.flagged == 1
    if fault == "keyframe-of-another-step":   # the command says so too, and exits 1
        assert cli("validate", str(copy), "--json") == 1
        data = json.loads(capsys.readouterr().out)
        assert data["flagged"] == 1 and data["per_program"]["orthanc"] == pytest.approx(2 / 3)


@pytest.mark.live
def test_moving_pixels_are_the_blinking_caret(backends):
    """DICOMscope's c field has the focus after the first step: its caret blinks (Java,
    0.5 s on, 0.5 s off) and nothing else on the screen moves."""
    [scenario] = select("dicomscope/medspot-18-modify-cw")
    env = StepsEnv(scenario, backend=backends("dicomscope"))
    try:
        obs, info = env.reset(seed=0)
        obs, reward, _, _, info = env.step(ground_truth(env).action())
        assert reward == 1.0
        field = ground_truth(env).target()          # the c field, where the text is typed next
        moving = env.moving_pixels(1.5)
        ys, xs = np.nonzero(moving)
        assert 0 < len(xs) < 40, len(xs)      # a caret: one or two columns, one line high
        assert field.x1 <= xs.min() and xs.max() <= field.x2 and field.y1 <= ys.min() and ys.max() <= field.y2
    finally:
        env.close()


@pytest.mark.live
def test_wall_clock_boxes_are_left_out(backends, tmp_path):
    """DICOMscope's Process log dates its rows with the time of the run: a recording and a
    later validation differ there and only there, and the scenario's `wall_clock` box says so."""
    scenario = SCENARIOS["dicomscope/medspot-16-process-log"]
    record_oracle(scenario, backends("dicomscope"), tmp_path / "run")
    to_medspot([tmp_path / "run"], tmp_path / "ds")
    [task] = read_dataset(tmp_path / "ds")
    check = validate_task(tmp_path / "ds", task, scenario, backends("dicomscope"))
    assert check.fidelity == 1.0, [s.flags for s in check.steps]
    blind = validate_task(tmp_path / "ds", task, scenario.model_copy(update={"wall_clock": []}),
                          backends("dicomscope"))
    flags = [[f.split(" (")[0] for f in s.flags] for s in blind.steps]
    # The first keyframe (the Browser) shows no log; the next two show the dates, in the target
    # rows. The row is flagged whatever the dates; the whole frame only when enough digits
    # differ (two runs some seconds apart can differ in fewer pixels than the threshold allows).
    assert len(flags) == 3 and flags[0] == [] and blind.steps[0].frame.identical == 1.0, flags
    for step, step_flags in zip(blind.steps[1:], flags[1:]):
        assert "target region differs from live screen" in step_flags, flags
        assert set(step_flags) <= {"keyframe differs from live screen",
                                   "target region differs from live screen"}, flags
        assert step.frame.identical < 1.0, flags
