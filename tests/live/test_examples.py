"""Every script of examples/ runs as a user runs it (its own process, this Python), within
a minute, exits 0 and prints what it is there to show."""
import re
import subprocess
import sys

import pytest

from conftest import REPO

EXAMPLES = REPO / "examples"


def run_example(name: str) -> list[str]:
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=120,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_every_example_is_tested():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == ["export_for_training.py", "own_agent.py",
                                                             "vllm_style_eval.py"]


@pytest.mark.live
def test_own_agent():
    lines = run_example("own_agent.py")
    # the middle of the screen is not where the first step's button is: the episode ends there
    assert lines == ["step 0: \"Click on 'All patients' to list the patients.\" -> click(960, 540): reward 0.0",
                     "episode: incorrect action; success False; total reward 0.0"]


@pytest.mark.live
def test_vllm_style_eval():
    lines = run_example("vllm_style_eval.py")
    assert re.fullmatch(r"model server: http://127\.0\.0\.1:\d+/v1", lines[0])
    assert lines[-1] == "TCA 100% (tasks completed) and S1A 100% (first step right) over 1 task(s); server " \
                        "stopped (exit 0)"


@pytest.mark.live
def test_export_for_training():
    lines = run_example("export_for_training.py")
    assert lines[2:4] == ["MedSPOT: 1 task(s), 3 steps, keyframes 3",
                          "parquet: 3 rows, columns image, app, scenario, episode, agent, overview, step, "
                          "instruction, expected_action, target_box, action_type, point, correct, failure, width, "
                          "height"]
    assert lines[4].startswith("row 0: \"Click on 'All patients' to list the patients.\" -> click at ")
    assert lines[4].endswith(" on a 1920x1080 keyframe")
