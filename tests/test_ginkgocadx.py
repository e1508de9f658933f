"""Ginkgo CADx 3.8.8 (Debian 11) in its container, on the real program: no first-run
dialog, the same start screen at every reset, every scenario completed by the oracle and
not by the random clicker, and no final check that already holds at the start."""
from __future__ import annotations

import numpy as np
import pytest

from clinigym.agents.oracle import OracleAgent
from clinigym.agents.random import RandomAgent
from clinigym.apps import load_app
from clinigym.conditions import holds
from clinigym.envs.live import LiveEnv
from clinigym.recording import read_episode
from clinigym.scenarios import select

pytestmark = pytest.mark.live
SCENARIOS = select("ginkgocadx/*")
IDS = [s.key for s in SCENARIOS]
RANDOM_SEEDS = (0, 1)


@pytest.fixture(scope="session")
def ginkgo():
    """One container for the whole session (its pristine state is prepared once)."""
    from clinigym.backends import make_backend
    from clinigym.images import ImageError
    try:
        backend = make_backend(load_app("ginkgocadx"), "docker")
    except ImageError as exc:
        pytest.skip(str(exc))
    yield backend
    backend.close()


def run_episode(env: LiveEnv, agent, seed: int) -> tuple[list[dict], bool, bool]:
    obs, info = env.reset(seed=seed)
    infos = []
    while True:
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        infos.append(info)
        if terminated or truncated:
            return infos, terminated, truncated


def test_start_has_no_first_run_dialog_and_is_the_same_every_reset(ginkgo):
    first = ginkgo.reset()
    assert ginkgo.display.window_titles() == ["Ginkgo CADx"]   # no licence, tips or update dialog
    second = ginkgo.reset()
    assert np.array_equal(first.raw, second.raw)
    # The prepared history (fixture studies linked, dates pinned) without the lock file
    # of the program that made it.
    home = ginkgo.pristine / "home"
    assert (home / ".ginkgocadx/DICOMDIR/ginkgodatabase_2.1.db").is_file()
    assert not (home / "Ginkgo-root").exists()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_oracle_completes(scenario, ginkgo, tmp_path):
    env = LiveEnv(scenario, backend=ginkgo, record_dir=tmp_path, agent_name="oracle")
    oracle = OracleAgent(env)
    obs, info = env.reset(seed=0)
    infos, terminated, truncated = [], False, False
    while not (terminated or truncated):
        last = obs["screenshot"]
        obs, _, terminated, truncated, info = env.step(oracle.act(obs, info))
        infos.append(info)
        assert info["correct"] and info["transition_seen"] is True, info
        assert not np.array_equal(last, obs["screenshot"])   # the agent sees the effect
    env.close()
    assert terminated and not truncated
    assert len(infos) == len(scenario.steps)
    assert infos[-1]["final_check"] is True
    episode = read_episode(next(tmp_path.iterdir()))
    assert episode.outcome["status"] == "complete"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_random_does_not_complete(scenario, ginkgo):
    env = LiveEnv(scenario, backend=ginkgo, agent_name="random")
    for seed in RANDOM_SEEDS:
        agent = RandomAgent(env, seed=seed)
        infos, terminated, truncated = run_episode(env, agent, seed)
        complete = terminated and infos[-1]["correct"] and infos[-1]["next_step"] == len(scenario.steps)
        assert not complete, (seed, infos[-1])
    env.close()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_final_check_fails_on_untouched_start(scenario, ginkgo):
    assert scenario.check, "every Ginkgo CADx scenario has a final state check"
    env = LiveEnv(scenario, backend=ginkgo)
    env.reset(seed=0)
    assert not any(holds(c, env.backend) for c in scenario.check)
    env.close()
