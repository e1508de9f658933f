"""The `clinigym` command on the real programs."""
import json
import subprocess
import sys

import pytest


def clinigym(*args, check=True):
    done = subprocess.run([sys.executable, "-m", "clinigym.cli", *args], capture_output=True, text=True,
                          timeout=600)
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("sub", ["apps", "scenarios", "run", "score", "bench", "export", "report",
                                 "replay", "validate", "agents"])
def test_help_everywhere(sub):
    assert "usage: clinigym" in clinigym(sub, "--help").stdout


def test_score_of_empty_folder_fails(tmp_path):
    done = clinigym("score", str(tmp_path), check=False)
    assert done.returncode == 1 and "no recorded episodes" in done.stderr


def test_malformed_scenario_clear_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("app: orthanc\noverview: x\nsteps:\n  - instruction: y\n    action: click\n")
    done = clinigym("scenarios", str(bad), check=False)
    assert done.returncode == 2
    assert f"{bad}: steps[0].target: Field required" in done.stderr


def test_agents_lists_agents_and_families():
    data = json.loads(clinigym("agents", "--json").stdout)
    assert {"oracle", "random", "ocr", "http"} <= set(data["agents"])
    assert {"ui-tars-1.5", "qwen2.5-vl", "aguvis", "cogagent", "seeclick", "gpt-4o"} <= set(data["families"])
