"""Vector environments (`gym.make_vec`) on the real program: sync and async, each
sub-environment with its own display and program, autoreset after an episode ends, and
actions given as strings through `batch_actions`."""
from __future__ import annotations

import gymnasium as gym
import pytest

import clinigym  # noqa: F401  (registers the environments)
from clinigym.envs import ground_truth
from clinigym.envs.spaces import batch_actions
from clinigym.envs.steps import StepsEnv
from clinigym.recording import read_episode
from clinigym.spec.scenarios import all_scenarios
from conftest import displays

SCENARIO = next(s for s in all_scenarios() if s.app == "dicomscope" and len(s.steps) >= 2)
WRONG = "click(1, 1)"   # the desktop's corner: no step of the scenario targets it


@pytest.fixture(scope="module")
def oracle_actions() -> list:
    """The scenario's correct actions, read once through the privileged interface of a
    plain environment (the sub-environments of an async vector live in other processes)."""
    env = StepsEnv(SCENARIO)
    try:
        env.reset(seed=0)
        actions = []
        for _ in SCENARIO.steps:
            truth = ground_truth(env)
            assert truth.target() is None or not truth.target().contains(1, 1)
            actions.append(truth.action())
            env.step(truth.action())
            assert truth.last_record().correct
        return actions
    finally:
        env.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_env_steps_apart_and_autoresets(mode, oracle_actions, tmp_path):
    before = displays()
    envs = gym.make_vec(SCENARIO.gym_id, num_envs=2, vectorization_mode=mode, record_dir=str(tmp_path))
    try:
        obs, info = envs.reset(seed=0)
        assert obs["screenshot"].shape[0] == 2 and info["step"].tolist() == [0, 0]
        assert displays() == before + 2    # one display (and program) per sub-environment

        # Environment 0 does the first step right, environment 1 clicks wrong and ends.
        obs, reward, terminated, truncated, info = envs.step(batch_actions([oracle_actions[0], WRONG]))
        assert reward.tolist() == [1.0, 0.0] and terminated.tolist() == [False, True]
        assert info["end_reason"][1] == "incorrect action" and not info["_end_reason"][0]
        assert obs["step"].tolist() == [1, 0]

        # Next step: environment 1 starts over (its action is not taken), environment 0 goes on
        # on its own screen: a shared display would have lost its state to the other's reset.
        for i, action in enumerate(oracle_actions[1:], start=1):
            obs, reward, terminated, truncated, info = envs.step(batch_actions([action, WRONG]))
            assert reward[0] == 1.0 and obs["step"][0] == i + 1
            if i == 1:
                assert obs["step"][1] == 0 and not terminated[1] and reward[1] == 0.0
        assert terminated[0] and info["end_reason"][0] == "completed"
        assert not truncated.any()
    finally:
        envs.close()
    assert displays() == before

    episodes = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    recorded = [read_episode(p) for p in episodes]
    outcomes = [(e.header.outcome.status, [s.correct for s in e.steps]) for e in recorded]
    n = len(SCENARIO.steps)
    # Environment 0 once, all right; environment 1 a wrong first click after every reset
    # (it resets on every second call), its last episode abandoned when it was just reset.
    assert outcomes.count(("complete", [True] * n)) == 1
    assert outcomes.count(("failed", [False])) == (n + 1) // 2
    assert len(outcomes) == 1 + (n + 1) // 2 + (n % 2 == 0)
