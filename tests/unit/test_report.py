"""`clinigym report`: real recorded runs (the static keyframe environment on MedSPOT's
Orthanc and DICOMscope tasks, with placeholder keyframes) reported, and the page opened
in a real headless Chromium (Debian's, driven by Playwright): it renders, every image
loads, nothing is fetched from anywhere but the report folder, no console error."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from clinigym.cli.main import build_parser
from clinigym.envs import ground_truth
from clinigym.envs.static import StaticEnv
from clinigym.eval import report
from clinigym.eval.scoring import score_dirs
from clinigym.spec.medspot import read_dataset, write_dataset
from conftest import ANNOTATIONS

SIZE = (320, 180)
SOFTWARE = ("Orthanc", "DICOMscope")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
# Set to a path (e.g. docs/report.png) to keep the screenshot the test takes of the page.
SCREENSHOT_ENV = "CLINIGYM_REPORT_SCREENSHOT"


def _keyframe(path: Path, seed: int) -> None:
    """A placeholder screen: a title bar, a toolbar, a side panel and a dark viewport."""
    shade = seed % 60
    img = Image.new("RGB", SIZE, (228 - shade // 3, 230, 234))
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, SIZE[0], 12], fill=(60, 70, 90))
    d.rectangle([0, 13, SIZE[0], 26], fill=(205, 208, 214))
    for i in range(8):
        d.rectangle([4 + 18 * i, 15, 17 + 18 * i, 24], fill=(150 + 10 * (i % 3), 160, 175))
    d.rectangle([0, 27, 70, SIZE[1]], fill=(240, 241, 244))
    d.rectangle([74, 30, SIZE[0] - 4, SIZE[1] - 4], fill=(20 + shade, 22, 28))
    d.ellipse([150, 60, 240, 150], fill=(120 + shade, 120 + shade, 120 + shade))
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two recorded runs: the oracle, and a scripted agent (right or random on the first step,
    random or out of the image afterwards: correct, wrong and no-prediction steps)."""
    root = tmp_path_factory.mktemp("report")
    dataset = root / "dataset"
    tasks = [t for t in read_dataset(ANNOTATIONS) if t.software in SOFTWARE]
    write_dataset(tasks, dataset)
    for i, path in enumerate(sorted({s.image_path for t in tasks for s in t.steps})):
        _keyframe(dataset / path, i * 7)
    rng = np.random.default_rng(0)

    def scripted(env, obs):
        u = rng.random()
        if obs["step"] == 0 and u < 0.5:
            return ground_truth(env).action()
        if u < 0.8:
            return {"type": "click", "x": int(rng.integers(SIZE[0])), "y": int(rng.integers(SIZE[1]))}
        return "click(400, 10)"    # outside the observation: invalid, scored no_prediction

    made = []
    for name, agent, policy in (("oracle-run", "oracle", lambda e, obs: ground_truth(e).action()),
                                ("scripted-run", "scripted", scripted)):
        run_dir = root / name
        env = StaticEnv(dataset, observation_size=SIZE, record_dir=run_dir / "episodes", agent_name=agent)
        for _ in env.tasks:
            obs, _ = env.reset()
            done = False
            while not done:
                obs, _, term, trunc, _ = env.step(policy(env, obs))
                done = term or trunc
        env.close()
        made.append(run_dir)
    return made


@pytest.fixture(scope="module")
def built(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "report"
    page = report.build_report(runs, out)
    return page, json.loads((out / "report.json").read_text())


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
