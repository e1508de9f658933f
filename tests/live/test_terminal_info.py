"""The verdict a training loop reads at the end of an episode, through `gym.make` on the live
Orthanc Explorer: `info["is_success"]` (as Stable-Baselines3 reads it) and, in the goal mode,
the success, the strict success and the safety audit's counts, equal to what the recording
holds and scoring reads; only the step that ends the episode carries them."""
from __future__ import annotations

import gymnasium as gym
import pytest

from clinigym.agents import make_agent
from clinigym.core import audit
from clinigym.core.actions import Action
from clinigym.envs import PUBLIC_INFO, agent_context, ground_truth, register_envs
from clinigym.eval.goal_scoring import goal_result
from clinigym.eval.scoring import score_dirs
from clinigym.recording import episode_folders, read_episode

pytestmark = pytest.mark.live
SCENARIO = "orthanc-open-patient-study"
VERDICT = ("is_success", "success", "strict_success", "safety")


def episode(env, policy) -> tuple[list[dict], float]:
    """Every info of one episode, and its last reward."""
    _, info = env.reset(seed=0)
    infos = [info]
    while True:
        _, reward, terminated, truncated, info = env.step(policy())
        infos.append(info)
        if terminated or truncated:
            return infos, reward


def made(mode: str, backends, record_dir):
    register_envs()
    suffix = "" if mode == "steps" else f"-{mode}"
    return gym.make(f"clinigym/{SCENARIO}{suffix}-v0", backend=backends("orthanc"), record_dir=record_dir,
                    agent_name="oracle")


def only_at_the_end(infos: list[dict]) -> dict:
    assert all(set(i) <= set(PUBLIC_INFO) for i in infos)
    assert [k for i in infos[:-1] for k in VERDICT if k in i] == []
    return infos[-1]


def test_goal_mode_verdict_equals_the_recording(backends, tmp_path):
    """The oracle (through the privileged interface of the gym.make environment), then fail()
    at once: is_success True, then False, each equal to the recorded judgment."""
    env = made("goal", backends, tmp_path)
    oracle = make_agent("oracle", agent_context(env), privileged=ground_truth(env))
    right, reward = episode(env, lambda: oracle.act({}, {}))
    wrong, _ = episode(env, lambda: Action("fail", text="not today"))
    env.close()
    ends = [only_at_the_end(right), only_at_the_end(wrong)]
    assert reward == 1.0 and ends[0]["end_reason"] == "done" and ends[1]["end_reason"] == "fail"
    assert [e["is_success"] for e in ends] == [True, False]
    episodes = [read_episode(f) for f in episode_folders(tmp_path)]
    for end, ep in zip(ends, episodes, strict=True):
        j = ep.outcome.judgment
        assert end["is_success"] == goal_result(ep).strict() == ep.outcome.is_success
        assert (end["success"], end["strict_success"]) == (j.success, goal_result(ep).strict())
        assert end["safety"] == audit.tally(j.violations)
    assert ends[0]["safety"]["violations"] == 0 == ends[1]["safety"]["violations"]


def test_steps_mode_verdict_is_the_completed_task(backends, tmp_path):
    """The ground truth's actions complete the task; a click at the corner ends the next
    episode: is_success True, then False, as scoring counts the tasks (TCA)."""
    env = made("steps", backends, tmp_path)
    right, _ = episode(env, lambda: ground_truth(env).action())
    wrong, _ = episode(env, lambda: "click(0, 0)")
    env.close()
    ends = [only_at_the_end(right), only_at_the_end(wrong)]
    assert [e["end_reason"] for e in ends] == ["completed", "incorrect action"]
    assert [set(VERDICT) & set(e) for e in ends] == [{"is_success"}] * 2
    episodes = [read_episode(f) for f in episode_folders(tmp_path)]
    assert [e["is_success"] for e in ends] == [True, False] == [ep.outcome.is_success for ep in episodes]
    summary, _ = score_dirs([tmp_path])
    assert summary["tca"] == 0.5
