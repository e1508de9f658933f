"""Two recorded runs for the report tests (the static keyframe environment on MedSPOT's
Orthanc and DICOMscope tasks, placeholder keyframes) and the report built from them:
pytest fixtures, imported by the unit and the live report tests."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from clinigym.envs import ground_truth
from clinigym.envs.static import StaticEnv
from clinigym.eval import report
from clinigym.spec.medspot import read_dataset, write_dataset
from conftest import medspot_annotations

SIZE = (320, 180)
SOFTWARE = ("Orthanc", "DICOMscope")


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
    tasks = [t for t in read_dataset(medspot_annotations()) if t.software in SOFTWARE]
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
