"""The installable package: `python -m build` gives a wheel that carries the programs and
scenarios; installed into a fresh virtualenv in a temporary folder, it lists the programs,
makes an environment and runs the oracle on a live scenario from outside the repository.
A lab's folder on CLINIGYM_PATH adds a program and a scenario, and moves no other
program's ports."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clinigym.spec.scenarios import all_scenarios
from conftest import REPO

LAB_PROGRAM = """name: labviewer
title: A lab's own X program (xmessage)
debian_packages: [x11-utils]
ports: [http]
port_block: 11
processes:
  - name: viewer
    command: [xmessage, -geometry, +100+100, -buttons, "okay:0", Hello]
    ready: {window: ^xmessage$}
settle: {quiet: 0.3}
"""
LAB_SCENARIO = """app: labviewer
overview: Dismiss the message.
steps:
  - instruction: Click on 'okay'.
    action: click
    target: {box: [108, 163, 150, 180]}
    transition: {exited: viewer}
"""


def run(argv, cwd, env=None, timeout=900):
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtualenv outside the repository with only the built wheel (and its
    dependencies from the package index) installed."""
    base = tmp_path_factory.mktemp("wheel")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", base / "dist", REPO], cwd=base)
    wheel = next((base / "dist").glob("clinigym-*.whl"))
    run([sys.executable, "-m", "venv", base / "venv"], cwd=base)
    run([base / "venv/bin/pip", "install", "-q", wheel], cwd=base)
    away = base / "elsewhere"
    away.mkdir()
    env = {"PATH": f"{base / 'venv/bin'}:/usr/bin:/bin", "HOME": str(base), "LANG": "C.UTF-8",
           "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache"))}
    return base, wheel, away, env


def test_the_wheel_carries_programs_and_scenarios(installed):
    import zipfile
    _, wheel, _, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert "clinigym/_data/containers/orthanc/app.yaml" in names
    assert "clinigym/_data/scenarios/orthanc/delete-study.yaml" in names
    assert "clinigym/eval/report/report.css" in names and "clinigym/collect/page.js" in names
    assert not [n for n in names if n.startswith(("tests/", "containers/", "scenarios/"))]


def test_installed_package_works_from_any_folder(installed):
    base, _, away, env = installed
    apps = {r["name"]: r for r in json.loads(run(["clinigym", "programs", "--json"], away, env))}
    assert {"orthanc", "ohif", "dicomscope", "aeskulap", "itksnap", "ginkgocadx"} <= set(apps)
    site = base / "venv" / "lib"
    assert all(Path(r["folder"]).is_relative_to(site) for r in apps.values())   # not the repository's
    assert run(["clinigym", "scenarios"], away, env).strip().endswith(f"{len(all_scenarios())} scenarios")
    made = run(["python", "-c", "import gymnasium as gym, clinigym\n"
                "env = gym.make('clinigym/orthanc-delete-study-v0')\n"
                "print(type(env.unwrapped).__name__, env.unwrapped.scenario.path)\nenv.close()"], away, env)
    kind, path = made.split()
    assert kind == "StepsEnv" and Path(path).is_relative_to(site)
    summary = json.loads(run(["clinigym", "run", "--scenario", "dicomscope/medspot-01-flip", "--agent", "oracle",
                              "--out", away / "run", "--no-progress", "--json"], away, env))
    assert summary["tca"] == 1.0 and summary["n_tasks"] == 1 and summary["errors"] == []


def test_a_lab_folder_adds_a_program_without_moving_ports(installed):
    base, _, away, env = installed
    lab = base / "lab"
    (lab / "containers/labviewer").mkdir(parents=True)
    (lab / "containers/labviewer/app.yaml").write_text(LAB_PROGRAM)
    (lab / "scenarios/labviewer").mkdir(parents=True)
    (lab / "scenarios/labviewer/press-okay.yaml").write_text(LAB_SCENARIO)
    before = {r["name"]: r["ports"] for r in json.loads(run(["clinigym", "programs", "--json"], away, env))}
    with_lab = {**env, "CLINIGYM_PATH": str(lab)}
    after = {r["name"]: r["ports"] for r in json.loads(run(["clinigym", "programs", "--json"], away, with_lab))}
    assert after.pop("labviewer") == {"http": 20000 + 11 * 640}
    assert after == before
    summary = json.loads(run(["clinigym", "run", "--scenario", "labviewer/*", "--agent", "oracle",
                              "--out", away / "lab-run", "--no-progress", "--json"], away, with_lab))
    assert summary["tca"] == 1.0 and summary["per_app"]["labviewer"]["n_tasks"] == 1
