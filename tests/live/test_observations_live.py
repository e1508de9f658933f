"""Observation modes on the live programs (issue #37): a desktop program (Aeskulap, AT-SPI)
and a web program (Orthanc Explorer, DevTools). The oracle completes the scenario whatever
the agent observes; the tree comes as text and JSON of one read, timed; the recording says
which observation the episode used. The set-of-marks observation of every program is
tests/live/test_program_trees.py's; that the tree is the program's own, nothing added,
tests/live/test_leaks.py's."""
from __future__ import annotations

import json

import pytest

from clinigym.envs.steps import StepsEnv
from clinigym.recording import episode_folders, read_episode
from clinigym.spec.paths import builtin_root
from conftest import oracle

SCENARIOS = builtin_root() / "scenarios"
CASES = {"aeskulap": "aeskulap/open-study-file.yaml", "orthanc": "orthanc/anonymize-study.yaml"}


def _count(tree: dict) -> int:
    def count(e: dict) -> int:
        return 1 + sum(map(count, e["children"]))
    return sum(map(count, tree["roots"]))


def _run(env) -> tuple[list[dict], list[dict], float]:
    """The oracle's episode: every observation and info, and the reward."""
    obs, info = env.reset(seed=0)
    agent = oracle(env)
    observations, infos, reward, done = [obs], [info], 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        observations.append(obs)
        infos.append(info)
        done = terminated or truncated
    return observations, infos, reward


@pytest.mark.parametrize("app", list(CASES))
def test_a11y_observation_is_the_program_s_tree_and_the_oracle_completes(app, tmp_path):
    env = StepsEnv(str(SCENARIOS / CASES[app]), obs_mode="screenshot+a11y", record_dir=tmp_path)
    try:
        obs, info = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        # The text and the JSON are one tree; that it is the program's own read, nothing added,
        # is tests/live/test_leaks.py's.
        tree = json.loads(obs["a11y_json"])
        assert tree["source"] == env.app.accessibility.source and obs["a11y"].count("\n") + 1 == _count(tree)
        observations, infos, reward = _run(env)
        assert reward == 1.0 and infos[-1]["end_reason"] is not None
        assert all(o["a11y"] and "a11y" in i["timings"] for o, i in zip(observations, infos))
    finally:
        env.close()
    # Two episodes: the first reset's, abandoned, and the oracle's.
    assert [read_episode(f).header.observation for f in episode_folders(tmp_path)] == ["screenshot+a11y"] * 2


def test_a_shared_backend_gets_its_accessibility_at_the_reset():
    from clinigym.runtime.backends import make_backend
    from clinigym.spec.apps import load_app
    backend = make_backend(load_app("aeskulap"))
    try:
        backend.reset()                       # running without its bridge
        env = StepsEnv(str(SCENARIOS / CASES["aeskulap"]), backend=backend, obs_mode="a11y")
        obs, info = env.reset(seed=0)         # restarted with it
        assert backend.accessibility and '"File"' in obs["a11y"]
        env.close()
    finally:
        backend.close()


@pytest.mark.parametrize("app", list(CASES))
def test_a_killed_program_ends_a_tree_episode_with_its_reason(app):
    env = StepsEnv(str(SCENARIOS / CASES[app]), obs_mode="screenshot+a11y")
    try:
        obs, info = env.reset(seed=0)
        agent = oracle(env)
        action = agent.act(obs, info)
        env.backend.kill()   # as a crash would: its bus connection or DevTools goes with it
        obs, reward, terminated, truncated, info = env.step(action)
        assert truncated and reward == 0.0 and info["end_reason"].startswith("the program stopped:")
        assert obs["a11y"] == "" and json.loads(obs["a11y_json"])["roots"] == []
    finally:
        env.close()
