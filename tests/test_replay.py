"""`clinigym replay` on the real programs: a recorded episode, re-executed from a
fresh reset, reproduces its screens and outcomes (also a failed one), and a
tampered recording is reported as not matching."""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from clinigym.envs.live import LiveEnv
from clinigym.recording import read_episode
from clinigym.replay import DEFAULT_THRESHOLD, Similarity, register, replay_episode, similarity
from clinigym.scenarios import all_scenarios

SCENARIOS = {s.key: s for s in all_scenarios()}
ORTHANC, DICOMSCOPE = "orthanc/open-patient-study", "dicomscope/medspot-09-view-image"


def record(key: str, backend, out: Path, wrong_at: int | None = None) -> Path:
    """Record one oracle episode; at action `wrong_at` click far from the live target."""
    env = LiveEnv(SCENARIOS[key], backend=backend, record_dir=out, agent_name="oracle")
    obs, _ = env.reset(seed=0)
    for i in range(len(SCENARIOS[key].steps)):
        action = env.oracle_action()
        if i == wrong_at:   # as in test_live: the opposite half of the screen from the target
            box, (h, w) = env.current_target(), obs["screenshot"].shape[:2]
            x, y = (w * 0.5, h * 0.9) if box.center[1] < h / 2 else (w * 0.5, h * 0.3)
            action = {"type": "click", "x": x, "y": y}
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    env.close()
    return next(out.iterdir())


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="clinigym")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return args.func(args)


@pytest.fixture(scope="module")
def oracle_episodes(backends, tmp_path_factory):
    made: dict[str, Path] = {}

    def get(key: str) -> Path:
        if key not in made:
            made[key] = record(key, backends(SCENARIOS[key].app), tmp_path_factory.mktemp("oracle"))
        return made[key]
    return get


def test_similarity_measure():
    a = np.zeros((100, 100, 3), np.uint8)
    b = a.copy()
    assert similarity(a, b).identical == 1.0 and similarity(a, b).matches()
    b[0, :2] = (255, 0, 0)          # 2 of 10,000 pixels differ: 0.9998 identical
    s = similarity(a, b)
    assert s.differing == 2 and s.identical == pytest.approx(0.9998)
    assert not s.matches() and s.matches(0.999)
    assert s.mad == pytest.approx(2 * 255 / (100 * 100 * 3))
    ignore = np.zeros((100, 100), bool)
    ignore[0, 0] = True             # one of the two left out: 1 of 9,999 differs
    s = similarity(a, b, ignore)
    assert s.differing == 1 and s.identical == pytest.approx(9998 / 9999)
    assert s.mad == pytest.approx(255 / (9999 * 3))
    ignore[0, 1] = True
    assert similarity(a, b, ignore) == Similarity(1.0, 0.0, 0)
    assert similarity(a, b, np.ones((100, 100), bool)) == Similarity(1.0, 0.0, 0)


def test_help(capsys):
    with pytest.raises(SystemExit) as exc:
        cli("replay", "--help")
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "usage: clinigym replay" in out and "--threshold" in out and "--json" in out


@pytest.mark.live
@pytest.mark.parametrize("key", [ORTHANC, DICOMSCOPE])
def test_oracle_episode_replays_identically(key, backends, oracle_episodes):
    folder = oracle_episodes(key)
    assert read_episode(folder).outcome["status"] == "complete"
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
    assert [s["correct"] for s in episode.steps] == [True, False]
    assert episode.outcome["status"] == "failed"
    report = replay_episode(folder, backends("dicomscope"))
    assert report.all_match, report
    failed = report.steps[1]
    assert failed.live == failed.recorded and failed.live.correct is False
    assert failed.live.failure == episode.steps[1]["failure"] is not None
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
