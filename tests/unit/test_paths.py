"""The search path: a lab's own folder of programs and scenarios is picked up (environment
variable, or added at run time), never silently replaces a built-in one, and a program with
ports declares a fixed block that no other program may take."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import clinigym
from clinigym.core.errors import SpecError
from clinigym.runtime.slots import slot_ports
from clinigym.spec import paths
from clinigym.spec.apps import app_names, load_app, programs
from clinigym.spec.scenarios import all_scenarios, select

PROGRAM = """name: {name}
title: A test viewer
debian_packages: [x11-utils]
ports: [http]
port_block: {block}
processes:
  - name: viewer
    command: [xmessage, -geometry, +100+100, -buttons, "okay:0", Hello]
    ready: {{window: ^xmessage$}}
"""
SCENARIO = """app: {name}
overview: Press the button.
steps:
  - instruction: Click on 'okay'.
    action: click
    target: {{box: [100, 100, 140, 120]}}
    transition: {{exited: viewer}}
"""


def lab(folder: Path, name: str = "labviewer", block: int = 11) -> Path:
    (folder / "containers" / name).mkdir(parents=True)
    (folder / "containers" / name / "app.yaml").write_text(PROGRAM.format(name=name, block=block))
    (folder / "scenarios" / name).mkdir(parents=True)
    (folder / "scenarios" / name / "press-okay.yaml").write_text(SCENARIO.format(name=name))
    return folder


def test_a_folder_on_clinigym_path_adds_programs_and_scenarios(tmp_path, monkeypatch):
    before = {n: slot_ports(a.port_block, 0, a.ports) for n, a in programs().items() if a.ports}
    monkeypatch.setenv(paths.ENV_VAR, str(lab(tmp_path)))
    assert "labviewer" in app_names() and load_app("labviewer").folder == tmp_path / "containers" / "labviewer"
    assert [s.key for s in select("labviewer/*")] == ["labviewer/press-okay"]
    assert len(all_scenarios()) == len(paths.scenario_files(paths.folders()[1:])) + 1
    # adding a program moves no other program's ports
    after = {n: slot_ports(a.port_block, 0, a.ports) for n, a in programs().items() if a.ports}
    assert {n: p for n, p in after.items() if n in before} == before
    assert after["labviewer"] == {"http": 20000 + 11 * 640}
    assert before == {"ohif": {"orthanc": 22560, "dicom": 22561, "web": 22562, "cdp": 22563},
                      "orthanc": {"http": 23200, "dicom": 23201, "cdp": 23202},
                      "gnuhealth": {"tryton": 23840, "orthanc": 23841}}


def test_registration_and_the_cli_see_the_folder(tmp_path, monkeypatch):
    folder = lab(tmp_path)
    monkeypatch.setattr(paths, "_added", [])
    clinigym.add_folder(folder)
    assert "clinigym/labviewer-press-okay-v0" in gym.registry
    done = subprocess.run([sys.executable, "-m", "clinigym.cli", "--path", str(folder), "scenarios", "--json"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "labviewer/press-okay" in [s["key"] for s in json.loads(done.stdout)]


def test_a_taken_port_block_names_both_files(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.ENV_VAR, str(lab(tmp_path, block=5)))   # orthanc's
    with pytest.raises(SpecError, match=r"port_block: 5 is taken by") as err:
        programs()
    assert "labviewer/app.yaml" in str(err.value) and "orthanc/app.yaml" in str(err.value)


def test_a_program_with_ports_needs_a_block(tmp_path, monkeypatch):
    folder = lab(tmp_path)
    text = (folder / "containers/labviewer/app.yaml").read_text().replace("port_block: 11\n", "")
    (folder / "containers/labviewer/app.yaml").write_text(text)
    monkeypatch.setenv(paths.ENV_VAR, str(folder))
    with pytest.raises(SpecError, match="a program with ports needs a port_block"):
        programs()


def test_a_name_defined_twice_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.ENV_VAR, str(lab(tmp_path, name="orthanc", block=12)))
    with pytest.raises(SpecError, match=r"program 'orthanc' is also defined in"):
        programs()


def test_a_missing_folder_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(SpecError, match=f"{tmp_path / 'nowhere'}: CLINIGYM_PATH: no such folder"):
        paths.folders()
