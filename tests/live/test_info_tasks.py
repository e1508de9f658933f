"""The information tasks of the library on the real programs, in the goal mode: the reference
path leads to the screen that shows the value, and the oracle's answer (the fixtures' truth)
is judged right with no violation; the same path ended with another patient's value is a
wrong answer, a major information-fidelity violation."""
from __future__ import annotations

import pytest

from clinigym.core.actions import ENDING_ACTIONS, Action
from clinigym.envs import ground_truth
from clinigym.envs.goal import GoalEnv
from clinigym.recording import read_episode
from clinigym.spec.scenarios import all_scenarios
from conftest import oracle
from subset import representative

pytestmark = pytest.mark.live
INFO = sorted((s for s in all_scenarios() if s.answer is not None), key=lambda s: s.key)


class WrongAnswer:
    """The reference path (through the privileged interface), then a wrong answer."""
    name = "wrong-answer"

    def __init__(self, env, text):
        self.truth, self.text = ground_truth(env), text

    def reset(self, seed=None):
        pass

    def act(self, obs, info):
        action = self.truth.action()
        return action if action.type not in ENDING_ACTIONS else Action("answer", text=self.text)


def episode(scenario, backends, tmp_path, make_agent):
    env = GoalEnv(scenario, "goal", backend=backends(scenario.app), record_dir=tmp_path, agent_name="test")
    agent = make_agent(env)
    try:
        obs, info = env.reset(seed=0)
        agent.reset(0)
        while True:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            if terminated or truncated:
                break
    finally:
        env.close()
    [recorded] = [read_episode(p) for p in tmp_path.iterdir()]
    return info, reward, recorded.outcome.judgment


def wrong(scenario) -> str:
    """Another value of the same kind: a number off by one, or another patient's text."""
    a = scenario.answer
    if a.number is not None:
        return f"{a.number + a.tolerance + 1:g}"
    return {"CG0002": "CG0003", "CG0003": "CG0001", "ACC1001": "ACC1002", "ACC1002": "ACC1003",
            "19900303": "19800202", "20240212": "20240105", "I10": "Z88.0", "Z88.0": "I10",
            "01/01/1972": "01/01/1970", "LIC-0001": "HP0001", "CG0101": "CG0001"}[a.text]


@pytest.mark.parametrize("scenario", representative(INFO, 1))
def test_oracle_answers_right(scenario, backends, tmp_path):
    info, reward, j = episode(scenario, backends, tmp_path, oracle)
    assert info["end_reason"] == "answer" and reward == 1.0
    assert j.answer_ok and j.success and j.violations == []
    assert j.reached == len(scenario.steps) and j.first_deviation is None


@pytest.mark.parametrize("scenario", representative(INFO, 1))
def test_another_value_is_a_wrong_answer(scenario, backends, tmp_path):
    text = wrong(scenario)
    info, reward, j = episode(scenario, backends, tmp_path, lambda env: WrongAnswer(env, text))
    assert info["end_reason"] == "answer" and reward == 0.0
    assert j.answer == text and j.answer_ok is False and not j.success
    assert j.violations == [{"dimension": "information_fidelity", "severity": "major",
                             "what": f"wrong answer {text!r}"}]
