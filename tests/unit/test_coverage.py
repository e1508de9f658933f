"""MedSPOT coverage of the scenario library and the shape of datasets (pure logic, exact values),
and the results page's coverage table kept equal to what `clinigym coverage` prints."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from clinigym.cli import main
from clinigym.eval.coverage import NotReproduced, coverage, load_not_reproduced, markdown, shape, totals
from clinigym.spec.files import SpecError
from clinigym.spec.medspot import GroundTruth, MedspotStep, MedspotTask, read_dataset
from clinigym.spec.scenarios import all_scenarios, load_scenario
from conftest import REPO, medspot_annotations

COVERAGE_PAGE = REPO / "docs" / "results" / "dataset.md"


def _task(software: str, index: int, *boxes: tuple, kind: str = "click") -> MedspotTask:
    steps = tuple(MedspotStep(i + 1, f"img{i}.png", f"step {i}", (GroundTruth(kind, "t", b),))
                  for i, b in enumerate(boxes))
    return MedspotTask(software, index, f"task {index}", steps)


def _scenario(tmp_path: Path, name: str, task: int, adaptation: str | None = None):
    path = tmp_path / "dicomscope" / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    extra = f"adaptation: {adaptation}\n" if adaptation else ""
    path.write_text(f"""app: dicomscope
overview: x
medspot: {{software: DICOMscope, task: {task}}}
{extra}steps:
  - {{instruction: Click., action: click, target: {{box: [0, 0, 9, 9]}}, transition: {{window: x}}}}
""")
    return load_scenario(path)


def test_statuses(tmp_path):
    tasks = [_task("DICOMscope", i, (1, 1, 1, 1)) for i in range(4)] + [_task("MITK", 0, (1, 1, 1, 1))]
    scenarios = [_scenario(tmp_path, "medspot-00-a", 0),
                 _scenario(tmp_path, "medspot-01-b", 1, "Another menu. More words."),
                 _scenario(tmp_path, "analogue", 3)]   # not named for the task: not counted
    tasks.append(_task("DICOMscope", 4, (1, 1, 1, 1)))
    rows = coverage(tasks, scenarios, [NotReproduced(software="DICOMscope", task=2, reason="Gone. Long."),
                                       NotReproduced(software="DICOMscope", task=4, status="blocked",
                                                     reason="Unseen.")])
    assert [(r.task, r.status, r.scenarios, r.note) for r in rows] == [
        (0, "reproduced", ("dicomscope/medspot-00-a",), ""),
        (1, "adapted", ("dicomscope/medspot-01-b",), "Another menu."),
        (2, "impossible", (), "Gone."),
        (3, "missing", (), ""),
        (4, "blocked", (), "Unseen.")]
    assert totals(rows)["DICOMscope"] == {"tasks": 5, "reproduced": 1, "adapted": 1, "impossible": 1,
                                          "blocked": 1, "missing": 1}
    assert totals(rows)["Orthanc"]["tasks"] == 0


def test_name_and_reference_agree(tmp_path):
    with pytest.raises(SpecError, match="medspot-03-x.yaml: medspot: the name says MedSPOT task 3"):
        _scenario(tmp_path, "medspot-03-x", 4)


def test_shape_exact():
    tasks = [_task("A", 0, (0, 0, 1, 1), (0, 0, 3, 5)), _task("A", 1, (0, 0, 50, 50), kind="drag")]
    assert shape(tasks) == {"tasks": 2, "steps": 3, "scorable_steps": 3, "steps_per_task": 1.5,
                            "action_types": {"click": 2, "drag": 1},
                            "target_sizes": {"small": 1, "medium": 1, "large": 1}}


def test_listed_entries_are_real_tasks_without_scenarios():
    tasks = {(t.software, t.index) for t in read_dataset(medspot_annotations())}
    rows = {(r.software, r.task): r for r in coverage(read_dataset(medspot_annotations()), all_scenarios(),
                                                       load_not_reproduced())}
    for entry in load_not_reproduced():
        assert (entry.software, entry.task) in tasks
        assert rows[(entry.software, entry.task)].status == entry.status, "a listed task has a scenario"


def test_results_page_table_is_current():
    """The results page's table is `clinigym coverage`'s output (regenerate it when scenarios change)."""
    text = COVERAGE_PAGE.read_text()
    found = re.search(r"<!-- coverage:start -->\n(.*?)\n<!-- coverage:end -->", text, re.S)
    assert found, f"{COVERAGE_PAGE} has no coverage table between the markers"
    rows = coverage(read_dataset(medspot_annotations()), all_scenarios(), load_not_reproduced())
    assert found.group(1) == markdown(rows)


def test_cli_exit_status(capsys):
    rows = coverage(read_dataset(medspot_annotations()), all_scenarios(), load_not_reproduced())
    missing = any(r.status == "missing" for r in rows)
    assert main(["coverage", str(medspot_annotations())]) == (1 if missing else 0)
    assert "| Program | Tasks |" in capsys.readouterr().out
