"""The OCR grounding agent: its matching logic on synthetic word lists (no OCR), its
icon matching on the real icon crops, and the agent on the real programs (live):
what it solves, what it records, and that it runs with no network at all."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from clinigym.agents.ocr import (
    OcrAgent,
)
from clinigym.spec.scenarios import all_scenarios, first_per_program
from conftest import REPO

ROOT = REPO


# -- the instruction -----------------------------------------------------------------------


# -- text matching -------------------------------------------------------------------------


# -- icons ----------------------------------------------------------------------------------


# -- the agent ------------------------------------------------------------------------------


# -- live: the real programs ------------------------------------------------------------------
# What the OCR agent achieves on each scenario (steps correct, the failure of the step that
# ended it, the source of each step's point). Asserted exactly, so that a regression fails;
# `make test` runs the first two of each program, `make test-all` all of them and the rest
# of the library (no exact outcome).
EXPECTED = {
    "aeskulap/bone-window-invert": (3, None, ["icon", "ocr", "icon"]),
    # The scrollbar trough below the slider has neither text nor an icon: no point.
    "aeskulap/grid-layout-paging": (3, "no_prediction", ["ocr", "icon", "ocr", "none"]),
    # Typing at the focus (no point): the environment judges a type by the pointer,
    # which is still on the 'Open' menu item, not on the location field.
    "aeskulap/open-study-file": (2, "edge_bias", ["ocr", "ocr", "focus"]),
    "dicomscope/medspot-17-delete-study": (3, None, ["ocr", "icon", "ocr"]),
    "dicomscope/medspot-20-presets-min-max": (2, None, ["icon", "ocr"]),
    "dicomscope/medspot-03-rotate-invert": (2, None, ["icon", "icon"]),
    # "Open the study ..." says nothing of a double click: the right row, the wrong action.
    "dicomscope/medspot-09-view-image": (0, "wrong_action_type", ["ocr"]),
    "orthanc/anonymize-study": (3, None, ["ocr", "ocr", "ocr"]),
    "orthanc/delete-study": (3, None, ["ocr", "ocr", "ocr"]),
    "orthanc/open-patient-study": (3, None, ["ocr", "ocr", "ocr"]),
    "orthanc/preview-series": (4, None, ["ocr", "ocr", "ocr", "ocr"]),
    "orthanc/protect-patient": (3, None, ["ocr", "ocr", "ocr"]),
    # 'Export to DICOM Dir' is read on the toolbar's Export button, not the menu entry.
    "ginkgocadx/medspot-21-anonymized-export": (0, "toolbar_confusion", ["ocr"]),
    "ginkgocadx/medspot-09-dicom-inspector": (2, None, ["ocr", "ocr"]),
    # The file name is typed at the focus, judged by the pointer still on 'Accept'.
    "ginkgocadx/medspot-01-export-image": (3, "far_miss", ["ocr", "ocr", "ocr", "focus"]),
    "ginkgocadx/medspot-02-save-snapshot": (3, None, ["ocr", "ocr", "ocr"]),
    "ohif/open-study": (2, None, ["ocr", "ocr"]),
    # OHIF's toolbar is icons without text, and no OHIF icon templates exist yet: no point.
    "ohif/lung-window-preset": (0, "no_prediction", ["none"]),
    "ohif/stack-scroll": (0, "no_prediction", ["none"]),
    "ohif/search-patient": (0, "edge_bias", ["focus"]),
}


def _live_scenarios():
    return all_scenarios()


LIVE = _live_scenarios()
PINNED_FAST = {s.key for s in first_per_program([s for s in LIVE if s.key in EXPECTED], 2)}


@pytest.fixture(scope="module")
def step_times(request):
    times: list[float] = []
    yield times
    if times:
        p50, p95 = np.percentile(times, 50), np.percentile(times, 95)
        line = (f"OCR agent: {len(times)} steps, time per step p50 {p50:.2f} s, "
                f"p95 {p95:.2f} s, max {max(times):.2f} s")
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        capture = request.config.pluginmanager.get_plugin("capturemanager")
        if reporter and capture:
            with capture.global_and_fixture_disabled():
                reporter.write_line("\n" + line)


@pytest.mark.live
@pytest.mark.parametrize("scenario", [
    pytest.param(s, id=s.key, marks=[] if s.key in PINNED_FAST else [pytest.mark.slow]) for s in LIVE])
def test_ocr_agent_on_live_scenario(scenario, backends, tmp_path, step_times):
    from clinigym.envs.steps import StepsEnv
    from clinigym.recording import read_episode

    env = StepsEnv(scenario, backend=backends(scenario.app), record_dir=tmp_path, agent_name="ocr")
    agent = OcrAgent(env.agent_context())
    obs, info = env.reset(seed=0)
    agent.reset(0)

    while True:
        action = agent.act(obs, info)
        obs, _, terminated, truncated, info = env.step(action)

        step_times.append(action.meta["time"])
        if terminated or truncated:
            break
    env.close()
    assert not truncated, info.get("end_reason")
    episode = read_episode(next(tmp_path.iterdir()))
    for step in episode.steps:                           # every step has the agent's meta
        meta = step.agent
        assert meta["agent"] == "ocr" and meta["source"] in ("ocr", "icon", "focus", "none")
        assert {"matched", "score", "ocr_time", "n_words", "candidates"} <= set(meta)
        assert meta["time"] < 60
        if meta["source"] in ("ocr", "icon"):
            assert meta["matched"] and meta["score"] > 0
    correct = sum(1 for s in episode.steps if s.correct)
    if scenario.key not in EXPECTED:
        return
    n_correct, failure, sources = EXPECTED[scenario.key]
    assert [s.agent["source"] for s in episode.steps] == sources
    assert correct == n_correct
    if n_correct == len(scenario.steps):
        assert episode.status == "complete"
    else:
        assert episode.status == "failed"
        if failure:
            assert episode.steps[-1].failure == failure


@pytest.mark.live
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="needs root and util-linux unshare for a network namespace")
def test_ocr_agent_runs_without_network(backends, tmp_path):
    """Ground a saved live frame in a process with no network at all (`unshare -n`):
    the same point as with the network."""
    from PIL import Image

    from clinigym.envs.steps import StepsEnv
    scenario = next(s for s in LIVE if s.key == "orthanc/open-patient-study")
    env = StepsEnv(scenario, backend=backends("orthanc"))
    obs, _ = env.reset(seed=0)
    env.close()
    png = tmp_path / "frame.png"
    Image.fromarray(obs["screenshot"]).save(png)
    instruction = obs["instruction"]
    here = OcrAgent(app="orthanc").act(obs, {})
    assert here.point is not None
    script = (
        "import json, socket, sys\n"
        "import numpy as np\n"
        "from PIL import Image\n"
        "from clinigym.agents.ocr import OcrAgent\n"
        "try:\n"
        "    socket.create_connection(('1.1.1.1', 80), timeout=3).close(); net = 'reachable'\n"
        "except OSError as exc:\n"
        "    net = str(exc)\n"
        "rgb = np.asarray(Image.open(sys.argv[1]).convert('RGB'))\n"
        "a = OcrAgent(app='orthanc').act({'screenshot': rgb, 'instruction': sys.argv[2]}, {})\n"
        "print(json.dumps({'point': a.point, 'matched': a.meta['matched'], 'net': net,\n"
        "                  'interfaces': [n for _, n in socket.if_nameindex()]}))\n")
    done = subprocess.run(["unshare", "-n", sys.executable, "-c", script, str(png), instruction],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    if done.returncode != 0 and "unshare" in done.stderr and "Operation not permitted" in done.stderr:
        pytest.skip(f"no network namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr[-2000:]
    isolated = json.loads(done.stdout.strip().splitlines()[-1])
    assert isolated["interfaces"] == ["lo"] and isolated["net"] != "reachable"
    assert tuple(isolated["point"]) == tuple(here.point)
    assert isolated["matched"] == here.meta["matched"] == "All patients"
