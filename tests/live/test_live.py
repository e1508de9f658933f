"""The environment on the real programs: real Xvfb, real Orthanc + Chromium,
real DICOMscope and Aeskulap. Nothing here is simulated."""
from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from clinigym.core.judge import failure_type
from clinigym.envs import PUBLIC_INFO, ground_truth
from clinigym.envs.steps import StepsEnv
from clinigym.recording import read_episode
from clinigym.runtime.procfs import pids, stat
from clinigym.runtime.waiting import wait_for
from clinigym.spec.scenarios import all_scenarios
from conftest import judged, oracle
from subset import representative

pytestmark = pytest.mark.live
SCENARIOS = all_scenarios()
APPS = sorted({s.app for s in SCENARIOS})


def first_scenario(app):
    """The program's first scenario with a second step (information tasks end after one)."""
    return next(s for s in SCENARIOS if s.app == app and len(s.steps) >= 2)


@pytest.mark.parametrize("scenario", representative(SCENARIOS))
def test_oracle_completes_scenario(scenario, backends, tmp_path):
    env = StepsEnv(scenario, backend=backends(scenario.app), record_dir=tmp_path, agent_name="oracle")
    agent = oracle(env)
    obs, info = env.reset(seed=0)
    rewards = []
    while True:
        before = obs["screenshot"]
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        rewards.append(reward)
        record = judged(env)
        assert record.correct, record
        assert record.transition_seen is True
        assert set(info) <= set(PUBLIC_INFO)
        # A correct action really changed what the agent sees next.
        assert not np.array_equal(before, obs["screenshot"])
        if terminated or truncated:
            break
    assert terminated and not truncated and info["end_reason"] == "completed"
    assert rewards == [1.0] * len(scenario.steps)
    if scenario.check:
        assert record.final_check is True
    episode = read_episode(next(tmp_path.iterdir()))
    assert episode.status == "complete"
    assert len(episode.steps) == len(scenario.steps)
    env.close()


@pytest.mark.parametrize("app", APPS)
def test_wrong_click_ends_episode_with_protocol_failure(app, backends, tmp_path):
    scenario = first_scenario(app)
    env = StepsEnv(scenario, backend=backends(app), record_dir=tmp_path)
    obs, info = env.reset(seed=0)
    # Step 1 right, then a click far from step 2's target (the opposite corner region).
    obs, reward, terminated, _, info = env.step(oracle(env).act(obs, info))
    assert reward == 1.0 and not terminated
    box = ground_truth(env).target()  # the live target of step 2
    h, w = obs["screenshot"].shape[:2]
    point = (w * 0.5, h * 0.9) if box.center[1] < h / 2 else (w * 0.5, h * 0.3)
    obs, reward, terminated, truncated, info = env.step({"type": "click", "x": point[0], "y": point[1]})
    assert reward == 0.0 and terminated and not truncated and info["end_reason"] == "incorrect action"
    record = judged(env)
    assert not record.hit and not record.correct and record.step == 1
    assert record.failure == failure_type(point, box, w, h)
    assert "failure" not in info and "hit" not in info
    rec = read_episode(next(tmp_path.iterdir()))
    assert [s.correct for s in rec.steps] == [True, False]
    assert rec.status == "failed"
    env.close()


@pytest.mark.parametrize("app", APPS)
def test_two_resets_same_first_screenshot(app, backends):
    env = StepsEnv(first_scenario(app), backend=backends(app))
    first, _ = env.reset(seed=1)
    env.step(oracle(env).act(first, {}))   # change the program's state in between
    second, _ = env.reset(seed=2)
    assert np.array_equal(first["screenshot"], second["screenshot"])
    env.close()


@pytest.mark.parametrize("app", APPS)
def test_out_of_image_action_reported_not_raised(app, backends):
    env = StepsEnv(first_scenario(app), backend=backends(app))
    obs, info = env.reset(seed=0)
    w, h = info["coordinates"]["observation_size"]
    obs, reward, terminated, truncated, info = env.step({"type": "click", "x": w + 5, "y": 10})
    assert "outside" in info["invalid_action"]
    assert judged(env).failure == "no_prediction" and reward == 0.0 and terminated
    obs, info = env.reset(seed=0)
    obs, _, _, _, info = env.step("not an action")
    assert info["invalid_action"] and judged(env).failure == "no_prediction"
    env.close()


@pytest.mark.parametrize("app", APPS)
def test_killed_program_truncates_and_reset_recovers(app, backends, tmp_path):
    backend = backends(app)
    env = StepsEnv(first_scenario(app), backend=backend, record_dir=tmp_path)
    agent = oracle(env)
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
    assert reward == 1.0 and not (terminated or truncated)
    machine_tmp = set(Path(tempfile.gettempdir()).glob("org.chromium.Chromium.*"))
    backend.kill()   # as a crash would
    if backend.app.dom_port:   # what the killed browser left (its singleton socket) is in the work folder
        assert list(backend.tmp.glob("org.chromium.Chromium.*"))
    obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
    assert truncated and not terminated and reward == 0.0
    assert info["end_reason"].startswith("the program stopped:") and "exited" in info["end_reason"]
    assert "exited" in judged(env).truncated_reason and judged(env).failure == "app_crashed"
    rec = read_episode(next(tmp_path.iterdir()))
    assert len(rec.steps) == 2 and rec.status == "truncated"
    obs, info = env.reset(seed=0)      # self-healing: back to the pristine program
    obs, reward, _, _, info = env.step(agent.act(obs, info))
    assert reward == 1.0
    assert set(Path(tempfile.gettempdir()).glob("org.chromium.Chromium.*")) == machine_tmp
    env.close()


def test_a_stopped_program_or_a_display_dying_mid_step_truncates_with_its_reason(backends, tmp_path):
    """SIGSTOP past the settle timeout, and an X server killed while a step settles: each
    ends the episode truncated with its reason, its steps on disk; the next reset recovers."""
    backend = backends("dicomscope")
    env = StepsEnv(first_scenario("dicomscope"), backend=backend, record_dir=tmp_path)
    agent = oracle(env)
    obs, info = env.reset(seed=0)
    group = backend.procs["dicomscope"].pid
    os.killpg(group, signal.SIGSTOP)
    try:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
    finally:
        os.killpg(group, signal.SIGCONT)
    assert truncated and not terminated and reward == 0.0
    assert info["end_reason"] == "the program stopped: dicomscope stopped by a signal (SIGSTOP): it cannot run"
    obs, info = env.reset(seed=0)
    dying = backend.procs["dicomscope"].pid
    xvfb = backend.display.process_groups()
    settle = backend.settle

    def display_dies(**kwargs):
        # The X server dies as the step's screen starts to settle, after the action: a timer
        # would race the step itself (DICOMscope's idle window ends some steps in 0.25 s).
        for group in xvfb:
            os.killpg(group, signal.SIGKILL)
        wait_for(lambda: not [p for p in pids() if (st := stat(p)) and st.pgid in xvfb and st.state != "Z"],
                 10, "the X server to die")
        return settle(**kwargs)
    backend.settle = display_dies
    try:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
    finally:
        del backend.settle
    assert truncated and info["end_reason"].startswith("the program stopped: the X display is gone")
    assert judged(env).failure == "app_crashed"
    recs = [read_episode(f) for f in sorted(tmp_path.iterdir())]
    assert [(r.status, len(r.steps)) for r in recs] == [("truncated", 1), ("truncated", 1)]
    obs, info = env.reset(seed=0)          # a new display, a fresh program
    # Nothing is left of the program that died with its display, its helpers included.
    assert not [pid for pid in pids() if (st := stat(pid)) and st.pgid == dying and st.state != "Z"]
    assert env.step(agent.act(obs, info))[1] == 1.0
    env.close()


def test_check_env_passes():
    import gymnasium as gym
    scenario = first_scenario("dicomscope" if "dicomscope" in APPS else APPS[0])
    env = gym.make(scenario.gym_id)
    check_env(env.unwrapped)
    env.close()


def test_observation_scaling_contract(backends):
    """A smaller observation: points are observation pixels, scaled once to the screen."""
    scenario = first_scenario(APPS[0])
    env = StepsEnv(scenario, backend=backends(scenario.app), observation_size=(960, 540))
    obs, info = env.reset(seed=0)
    assert obs["screenshot"].shape == (540, 960, 3)
    assert info["coordinates"]["scale"] == [2.0, 2.0]
    obs, reward, *_ , info = env.step(oracle(env).act(obs, info))
    assert reward == 1.0
    env.close()


CHECKED = [s for s in SCENARIOS if s.check]


@pytest.mark.parametrize("scenario", representative(CHECKED))
def test_state_check_fails_on_untouched_start(scenario, backends):
    """A state check that already holds at the start could not tell a done task from an undone one
    (a `screen` check looks at the start screen; test_oracle_completes_scenario shows that the
    oracle's final state passes every check)."""
    from clinigym.spec.conditions import holds
    env = StepsEnv(scenario, backend=backends(scenario.app))
    env.reset(seed=0)
    now = env.backend.display.grab()
    assert not all(holds(c, env.backend, None, now) for c in scenario.check)
    env.close()


@pytest.mark.parametrize("scenario", representative(SCENARIOS))
def test_random_agent_does_not_complete(scenario, backends):
    """The chance baseline: uniform random clicks (two seeds) do not complete a scenario."""
    from clinigym.run.runner import agent_for
    env = StepsEnv(scenario, backend=backends(scenario.app), agent_name="random")
    for seed in (0, 1):
        agent = agent_for(env, "random", seed)
        obs, info = env.reset(seed=seed)
        while True:
            obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
            if terminated or truncated:
                break
        assert not truncated, info.get("end_reason")
        assert info["end_reason"] != "completed", seed
    env.close()


def test_a_reset_that_had_to_retry_records_its_first_cause(backends, tmp_path, monkeypatch):
    """The program is killed while it starts (a real crash of the real program): the reset
    retries from a new display, and says why in info and in the episode record."""
    backend = backends("dicomscope")
    env = StepsEnv(first_scenario("dicomscope"), backend=backend, record_dir=tmp_path)
    real_wait = backend._wait_ready
    crashed = []

    def crash_once(proc):
        if not crashed:
            crashed.append(proc.name)
            backend.kill(proc.name)
        return real_wait(proc)
    monkeypatch.setattr(backend, "_wait_ready", crash_once)
    obs, info = env.reset(seed=0)
    assert crashed and info["reset_retry"].startswith("ProgramDied: ") and "exited" in info["reset_retry"]
    obs, reward, *_ = env.step(oracle(env).act(obs, info))
    assert reward == 1.0
    env.close()
    assert read_episode(next(tmp_path.iterdir())).header.reset_retry == info["reset_retry"]
    obs, info = env.reset(seed=0)
    assert "reset_retry" not in info
    env.close()
