"""An agent from outside the package, named `module:factory`, run by `clinigym run` with a
pool of two workers on two real programs: each worker process imports the module (found
on PYTHONPATH, as a lab's code would be) and builds the agent from the public context; the
run completes, and run.json, summary.json and every episode's header name the agent."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from clinigym.recording import episode_folders, read_episode

SCENARIOS = ["orthanc/info-birth-date", "dicomscope/medspot-01-flip"]

LAB_AGENT = '''
"""A lab's agent, outside clinigym: it clicks the middle of the screen."""
import json
import os

from clinigym.core.actions import Action


class MiddleClicker:
    name = "middle"

    def __init__(self, context):
        self.size = context.observation_size

    def reset(self, seed=None):
        pass

    def act(self, observation, info):
        return Action("click", (self.size[0] / 2, self.size[1] / 2))


def make(context, seed, log):
    """Clicks the middle of the screen; notes where it was built in `log`."""
    with open(log, "a") as f:
        f.write(json.dumps({"pid": os.getpid(), "program": context.program, "size": context.observation_size,
                            "mode": context.mode, "seed": seed}) + "\\n")
    return MiddleClicker(context)
'''


@pytest.mark.live
def test_an_agent_from_outside_runs_in_a_pool(tmp_path):
    lab = tmp_path / "lab"
    lab.mkdir()
    (lab / "lab_agent.py").write_text(textwrap.dedent(LAB_AGENT))
    log, out = tmp_path / "built.jsonl", tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(lab)}
    cli = subprocess.Popen([sys.executable, "-m", "clinigym.cli", "run", "--scenario", *SCENARIOS,
                            "--agent", "lab_agent:make", "--agent-option", f"log={log}", "--workers", "2",
                            "--out", str(out), "--no-progress", "--json"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = cli.communicate(timeout=600)
    assert cli.returncode == 0, stderr
    summary = json.loads(stdout)
    assert summary["agent"] == "lab_agent:make" and summary["agent_source"] == "lab_agent:make"
    assert summary["errors"] == [] and summary["n_tasks"] == 2
    assert json.loads((out / "summary.json").read_text()) == summary

    spec = json.loads((out / "run.json").read_text())
    assert spec["agent"] == "lab_agent:make" and spec["agent_options"] == {"log": str(log)}
    episodes = [read_episode(f) for f in episode_folders(out / "episodes")]
    assert [(e.header.scenario, e.header.agent) for e in episodes] == \
        [(s, "lab_agent:make") for s in SCENARIOS]
    assert all(e.status in ("complete", "failed") and e.steps for e in episodes)

    # built once per scenario, in the pool worker that ran its episode (not in the command's
    # own process), from the public context of its program
    built = {b["program"]: b for b in map(json.loads, log.read_text().splitlines())}
    assert sorted(built) == ["dicomscope", "orthanc"] and len(log.read_text().splitlines()) == 2
    for e in episodes:
        assert built[e.header.app]["pid"] == e.header.pid != cli.pid
        assert (built[e.header.app]["mode"], built[e.header.app]["seed"]) == ("steps", 0)
