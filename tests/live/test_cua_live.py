"""The computer-use loops end to end: each format's agent talks over real HTTP (loopback) to
the test server, which answers in that format with a policy, and acts on a live program in
the goal mode. The policy follows the reference path through the environment's privileged
interface (the test's, never the agent's), or misbehaves on purpose: every ending reaches
the judgment as the environment records it."""
from __future__ import annotations

import pytest

from clinigym.agents import make_agent
from clinigym.agents.cua.formats import FORMATS
from clinigym.core.actions import Action
from clinigym.envs import ground_truth
from clinigym.envs.goal import GoalEnv
from clinigym.recording import read_episode
from clinigym.spec.scenarios import select
from clinigym.testing.cua_server import CuaServer
from clinigym.testing.policies import claim_done, follow, repeat, stop_early

pytestmark = pytest.mark.live
DELETE = "orthanc/delete-study"


def episode(backends, tmp_path, fmt, policy_of, scenario=DELETE, budget=None):
    """One goal-mode episode of `scenario` with the `fmt` loop against the test server."""
    scenario = select(scenario)[0]
    env = GoalEnv(scenario, "goal", backend=backends(scenario.app), record_dir=tmp_path, agent_name=f"cua-{fmt}",
                  budget=budget)
    obs, info = env.reset(seed=0)
    with CuaServer(fmt, policy_of(env), env.agent_context().observation_size) as server:
        agent = make_agent("cua", env.agent_context(), 0, format=fmt, base_url=server.url, timeout=30.0)
        while True:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            if terminated or truncated:
                break
        answers = list(server.answers)
    env.close()
    [ep] = [read_episode(p) for p in tmp_path.iterdir()]
    return info, reward, ep, answers


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_each_loop_completes_a_goal_task(fmt, backends, tmp_path):
    info, reward, ep, answers = episode(backends, tmp_path, fmt, lambda env: follow(ground_truth(env)))
    j = ep.outcome.judgment
    assert info["end_reason"] == "done" and reward == 1.0, info
    assert j.success and j.violations == [] and j.reached == 3 and j.actions == 4
    # every step recorded the request (screenshots left out), the model's raw answer and its
    # parsed action, which is the action the environment executed
    assert len(answers) == 4 and all(s.agent["raw"] and s.agent["prompt"] and s.agent["latency"] >= 0
                                     for s in ep.steps)
    assert [s.agent["parsed"][0] for s in ep.steps] == [s.action for s in ep.steps]


def test_a_loop_that_claims_done_at_once(backends, tmp_path):
    info, reward, ep, _ = episode(backends, tmp_path, "ui-tars-1.5", lambda env: claim_done())
    j = ep.outcome.judgment
    assert info["end_reason"] == "done" and j.false_done and not j.success and reward == 0.0
    assert j.violations == [{"dimension": "information_fidelity", "severity": "major",
                             "what": "done() claimed completion while the final-state checks fail"}]


def test_a_loop_that_stops_early(backends, tmp_path):
    info, reward, ep, _ = episode(backends, tmp_path, "qwen3-vl",
                                  lambda env: stop_early(follow(ground_truth(env)), 2))
    j = ep.outcome.judgment
    assert info["end_reason"] == "done" and (j.reached, j.actions) == (2, 3) and j.false_done


def test_a_loop_that_repeats_itself_runs_out_of_budget(backends, tmp_path):
    info, reward, ep, _ = episode(backends, tmp_path, "json", lambda env: repeat(Action("click", (5.0, 1070.0))),
                                  budget=4)
    j = ep.outcome.judgment
    assert info["end_reason"] == "action budget spent" and j.ending is None and j.actions == 4
    assert not j.success and not j.false_done and j.first_deviation == 0
