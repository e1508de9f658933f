"""`clinigym report` on real recorded runs (`report_runs`): its numbers are the scorer's,
its Markdown tables, its gallery, its command line."""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from clinigym.cli.main import build_parser
from clinigym.eval import report
from clinigym.eval.scoring import score_dirs


def test_json_numbers_are_the_scorer_s(runs, built):
    page, data = built
    assert page.name == "report.html" and page.exists()
    assert [r["label"] for r in data["runs"]] == ["oracle (oracle-run)", "scripted (scripted-run)"]
    for run_dir, run in zip(runs, data["runs"], strict=True):
        summary, results = score_dirs([run_dir])
        assert run["summary"] == json.loads(json.dumps(summary))
        assert run["episodes"] == len(results) == summary["n_tasks"] == 35
    oracle, scripted = (r["summary"] for r in data["runs"])
    assert oracle["tca"] == 1.0 and oracle["per_app"].keys() == {"Orthanc", "DICOMscope"}
    assert 0 < scripted["s1a"] < 1 and scripted["failures"].get("no_prediction")
    # Every recorded step is in the gallery (fewer than the cap), each with its image.
    outcomes = {e["outcome"] for e in data["runs"][1]["gallery"]}
    assert outcomes == {"correct", "wrong", "no_prediction"}
    for run in data["runs"]:
        assert len(run["gallery"]) == run["steps_recorded"]
        assert all(e["image"] and (page.parent / e["image"]).exists() for e in run["gallery"])


def test_markdown_has_the_metric_table(built):
    page, data = built
    md = (page.parent / "report.md").read_text()
    assert "| run | episodes | tasks | TCA | S1A | SHR | SHR_attempted | WPS | WPS_norm |" in md
    for run in data["runs"]:
        s = run["summary"]
        row = next(line for line in md.splitlines() if line.startswith(f"| {run['label']} | {run['episodes']} |"))
        lo, hi = s["ci95"]["tca"]
        assert f"| {100 * s['tca']:.1f}% ({100 * lo:.1f}-{100 * hi:.1f}%) |" in row
        assert f"| {s['wps']:.3f} (" in row
    orthanc = data["runs"][0]["summary"]["per_app"]["Orthanc"]
    assert "## Per program" in md
    assert f"| Orthanc | oracle (oracle-run) | {orthanc['n_tasks']} | 100.0% |" in md


def test_gallery_images_show_target_and_point(built):
    """The drawn colours: green around a correct step's target, grey for a step without prediction."""
    page, data = built
    gallery = data["runs"][1]["gallery"]
    for outcome, rgb in (("correct", (0x1a, 0x98, 0x50)), ("no_prediction", (0x8c, 0x8c, 0x8c)),
                         ("wrong", (0xd7, 0x30, 0x27))):
        entry = next(e for e in gallery if e["outcome"] == outcome)
        img = np.asarray(Image.open(page.parent / entry["image"]).convert("RGB")).astype(int)
        near = np.all(np.abs(img - np.array(rgb)) < 40, axis=-1)
        x1, y1, x2, y2 = (round(v) for v in entry["target_box"])
        edge = near[max(0, y1 - 2):y2 + 3, max(0, x1 - 2):x2 + 3]   # the box outline is drawn on its edge
        assert edge.sum() > 10, outcome


def test_gallery_cap_and_rebuild(runs, tmp_path):
    report.build_report(runs, tmp_path, gallery_limit=5)
    data = json.loads((tmp_path / "report.json").read_text())
    assert [len(r["gallery"]) for r in data["runs"]] == [5, 5]
    assert len(list((tmp_path / "images").glob("*.jpg"))) == 10
    assert "the first 5 of" in (tmp_path / "report.html").read_text()
    report.build_report(runs[:1], tmp_path, gallery_limit=3)     # stale images of the last build go
    assert len(list((tmp_path / "images").glob("*.jpg"))) == 3


def test_episode_folder_and_command_line(runs, tmp_path, capsys):
    parser = build_parser()
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["report", "--help"])
    assert exit_.value.code == 0 and "RUN_DIR" in capsys.readouterr().out
    assert parser.parse_args(["report", "x"]).out == "report/"

    episode = min((runs[1] / "episodes").iterdir())
    args = parser.parse_args(["report", str(runs[0]), str(episode), "--out", str(tmp_path / "r")])
    assert args.func(args) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "r" / "report.html")
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert data["runs"][1]["label"] == f"scripted ({episode.name})" and data["runs"][1]["episodes"] == 1

    empty = tmp_path / "empty"
    empty.mkdir()
    args = parser.parse_args(["report", str(runs[0]), str(empty), "--out", str(tmp_path / "r2")])
    assert args.func(args) == 1
    err = capsys.readouterr().err
    assert "error:" in err and str(empty) in err and "no recorded episodes" in err
    assert not (tmp_path / "r2" / "report.html").exists()
