"""`clinigym replay` on the real programs: a recorded episode, re-executed from a
fresh reset, reproduces its screens and outcomes (also a failed one), and a
tampered recording is reported as not matching."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clinigym.envs import ground_truth
from clinigym.envs.steps import StepsEnv
from clinigym.eval.replay import DEFAULT_THRESHOLD, replay_episode
from clinigym.recording import read_episode
from clinigym.spec.scenarios import all_scenarios
from conftest import cli

SCENARIOS = {s.key: s for s in all_scenarios()}
ORTHANC, DICOMSCOPE = "orthanc/open-patient-study", "dicomscope/medspot-09-view-image"


def record(key: str, backend, out: Path, wrong_at: int | None = None) -> Path:
    """Record one oracle episode; at action `wrong_at` click far from the live target."""
    env = StepsEnv(SCENARIOS[key], backend=backend, record_dir=out, agent_name="oracle")
    obs, _ = env.reset(seed=0)
    for i in range(len(SCENARIOS[key].steps)):
        action = ground_truth(env).action()
        if i == wrong_at:   # as in test_live: the opposite half of the screen from the target
            box, (h, w) = ground_truth(env).target(), obs["screenshot"].shape[:2]
            x, y = (w * 0.5, h * 0.9) if box.center[1] < h / 2 else (w * 0.5, h * 0.3)
            action = {"type": "click", "x": x, "y": y}
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    env.close()
    return next(out.iterdir())




@pytest.fixture(scope="module")
def oracle_episodes(backends, tmp_path_factory):
    made: dict[str, Path] = {}

    def get(key: str) -> Path:
        if key not in made:
            made[key] = record(key, backends(SCENARIOS[key].app), tmp_path_factory.mktemp("oracle"))
        return made[key]
    return get


@pytest.mark.live
@pytest.mark.parametrize("key", [ORTHANC, DICOMSCOPE])
def test_oracle_episode_replays_identically(key, backends, oracle_episodes):
    folder = oracle_episodes(key)
    assert read_episode(folder).status == "complete"
    report = replay_episode(folder, backends(SCENARIOS[key].app))
    assert report.all_match, report
    assert report.scenario == key and len(report.steps) == len(SCENARIOS[key].steps)
    for step in report.steps:
        assert step.matches and step.outcome_same and step.live.correct and step.live.transition_seen
        assert step.similarity.identical >= DEFAULT_THRESHOLD


@pytest.mark.live
def test_failed_episode_replays_with_the_same_failure(backends, tmp_path, capsys):
    folder = record(DICOMSCOPE, backends("dicomscope"), tmp_path, wrong_at=1)
    episode = read_episode(folder)
    assert [s.correct for s in episode.steps] == [True, False]
    assert episode.status == "failed"
    report = replay_episode(folder, backends("dicomscope"))
    assert report.all_match, report
    failed = report.steps[1]
    assert failed.live == failed.recorded and failed.live.correct is False
    assert failed.live.failure == episode.steps[1].failure is not None
    # The command: exit 0 when everything reproduces (it starts its own program).
    assert cli("replay", str(folder), "--json") == 0
    [data] = json.loads(capsys.readouterr().out)
    assert data["all_match"] is True and len(data["steps"]) == 2


@pytest.mark.live
def test_tampered_recording_does_not_match(backends, oracle_episodes, tmp_path, capsys):
    folder = tmp_path / "tampered"
    shutil.copytree(oracle_episodes(ORTHANC), folder)
    shutil.copyfile(folder / "step-002-before.png", folder / "step-001-before.png")
    report = replay_episode(folder, backends("orthanc"))
    assert not report.all_match
    assert [s.matches for s in report.steps] == [True, False, True]
    assert all(s.outcome_same for s in report.steps)   # the program did the same; the file lies
    assert report.steps[1].similarity.identical < DEFAULT_THRESHOLD
    assert cli("replay", str(folder)) == 1
    out = capsys.readouterr().out
    assert "DIFFERS" in out and "DIFF " in out
