"""The same scenario under the oracle on screens of other sizes than 1920x1080 (which the
rest of the live suite covers), each program's windows laid out for the screen: real Xvfb
at that size, the real program, targets found by meaning. A scenario with pixel boxes is
refused at another size (`clinigym.spec.screen_size`), before any program starts."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from Xlib import X
from Xlib import display as xdisplay

from clinigym.core.errors import SpecError
from clinigym.envs.steps import StepsEnv
from clinigym.runtime.display import Geometry
from clinigym.spec.scenarios import load_scenario
from clinigym.spec.screen_size import pixel_bound
from conftest import judged, oracle

pytestmark = pytest.mark.live
ROOT = Path(__file__).resolve().parents[2]
SMALL, LARGE = Geometry(1280, 800), Geometry(2560, 1440)
# One scenario per program whose targets and transitions are all by meaning.
BY_MEANING = {
    "orthanc": "scenarios/orthanc/open-patient-study.yaml",
    "ohif": "scenarios/ohif/open-study.yaml",
    "itksnap": "scenarios/itksnap/medspot-01-check-updates.yaml",
    "ginkgocadx": "scenarios/ginkgocadx/medspot-09-dicom-inspector.yaml",
    "gnuhealth": "scenarios/gnuhealth/info-age.yaml",
}


def windows(name: str) -> list[tuple[int, int, int, int]]:
    """x, y, width, height of every managed top-level window of the display `name`."""
    x = xdisplay.Display(name)
    try:
        root = x.screen().root
        prop = root.get_full_property(x.intern_atom("_NET_CLIENT_LIST"), X.AnyPropertyType)
        found = []
        for wid in prop.value if prop else []:
            win = x.create_resource_object("window", wid)
            g = win.get_geometry()
            at = win.translate_coords(root, 0, 0)
            found.append((-at.x, -at.y, g.width, g.height))
        return found
    finally:
        x.close()


def run_oracle(scenario_file: str | Path, geometry: Geometry, record_dir: Path, backend: str | None = None) -> None:
    """The oracle through the scenario at `geometry`: every step correct, the final check
    holds, the screenshot is the screen's size and the program's main window spans it."""
    scenario = load_scenario(ROOT / scenario_file if not Path(scenario_file).is_absolute() else Path(scenario_file))
    assert pixel_bound(scenario) == []
    env = StepsEnv(scenario, backend=backend, geometry=geometry, record_dir=record_dir, agent_name="oracle")
    try:
        agent = oracle(env)
        obs, info = env.reset(seed=0)
        assert obs["screenshot"].shape == (geometry.height, geometry.width, 3)
        widest = max(windows(env.backend.display.name), key=lambda w: w[2] * w[3])
        # laid out for this screen: the main window covers (nearly) all of it, wherever it is
        assert widest[2] >= 0.9 * geometry.width and widest[3] >= 0.9 * geometry.height, widest
        rewards = []
        while True:
            before = obs["screenshot"]
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            record = judged(env)
            assert record.correct, record
            assert not np.array_equal(before, obs["screenshot"])
            rewards.append(reward)
            if terminated or truncated:
                break
        assert info["end_reason"] == "completed" and rewards == [1.0] * len(scenario.steps)
        if scenario.check:
            assert record.final_check is True
    finally:
        env.close()


@pytest.mark.parametrize("geometry", [SMALL, LARGE], ids=str)
def test_orthanc_at_another_size(geometry, tmp_path):
    run_oracle(BY_MEANING["orthanc"], geometry, tmp_path)


def test_a_scenario_with_pixel_boxes_is_refused_at_another_size():
    scenario = load_scenario(ROOT / "scenarios/itksnap/info-slice-count.yaml")
    with pytest.raises(SpecError) as err:
        StepsEnv(scenario, geometry=SMALL)
    assert err.value.field == "steps[0].transition[0]"
    assert "1920x1080" in err.value.problem and "1280x800" in err.value.problem


@pytest.mark.slow
@pytest.mark.parametrize("geometry", [SMALL, LARGE], ids=str)
@pytest.mark.parametrize("app", sorted(set(BY_MEANING) - {"orthanc"}))
def test_program_at_another_size(app, geometry, tmp_path):
    run_oracle(BY_MEANING[app], geometry, tmp_path)


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("geometry", [SMALL, LARGE], ids=str)
def test_docker_backend_at_another_size(geometry, tmp_path):
    run_oracle(BY_MEANING["orthanc"], geometry, tmp_path, backend="docker")
