"""A grounding agent in the plan mode (clinigym.agents.plan): it works down the step list and
decides itself when it is done."""
from __future__ import annotations

import numpy as np
import pytest

from clinigym.agents import make_agent
from clinigym.agents.plan import PlanFollower, plan_steps
from clinigym.core.actions import Action
from clinigym.core.context import AgentContext
from clinigym.core.errors import AgentError

PLAN = "1. Open the study 'CT'.\n2. Type the name 'chest'.\n3. Click 'Nowhere'."


class Grounder:
    """Grounds a step to a point unless it names 'Nowhere'; types quoted text."""
    name = "grounder"

    def __init__(self):
        self.seen = []

    def reset(self, seed=None):
        self.seen.append(("reset", seed))

    def act(self, observation, info):
        step = observation["instruction"]
        self.seen.append(step)
        if "Type" in step:
            return Action("type", None, text="chest")
        return Action("click", None if "Nowhere" in step else (10.0, 20.0), meta={"step": step})


def obs(text=PLAN):
    return {"screenshot": np.zeros((4, 4, 3), np.uint8), "instruction": text, "step": 0}


def test_plan_steps_are_the_numbered_lines():
    assert plan_steps(PLAN + "\n4. Then answer: What is it?") == [
        "Open the study 'CT'.", "Type the name 'chest'.", "Click 'Nowhere'.", "Then answer: What is it?"]
    assert plan_steps("no plan here") == []


def test_works_down_the_list_and_gives_up_where_it_cannot_ground():
    inner = Grounder()
    agent = PlanFollower(inner)
    agent.reset(3)
    assert agent.act(obs(), {}) == Action("click", (10.0, 20.0))
    assert agent.act(obs(), {}) == Action("type", None, text="chest")
    assert agent.act(obs(), {}) == Action("fail", text="cannot find where to act for: Click 'Nowhere'.")
    assert inner.seen == [("reset", 3), "Open the study 'CT'.", "Type the name 'chest'.", "Click 'Nowhere'."]


def test_done_after_the_last_step_and_fail_on_a_question():
    agent = PlanFollower(Grounder())
    agent.reset()
    assert [agent.act(obs("1. Open 'A'."), {}).type for _ in range(2)] == ["click", "done"]
    agent.reset()
    assert agent.act(obs("1. Then answer: What is the ID?"), {}) == Action(
        "fail", text="cannot read the answer from the screen")


def test_a_grounding_agent_refuses_the_goal_mode():
    with pytest.raises(AgentError, match="grounds step instructions: run it in the steps or plan mode"):
        make_agent("ocr", AgentContext((8, 8), "orthanc", mode="goal"))
