"""Nothing an agent receives locates the answer.

An agent that keeps everything it is given (its construction arguments, every observation,
every info) runs every mode: strict and recovery on the live programs, the plan and goal
modes, a scaled live observation, the static keyframe mode and its single-step variant. The test drives the
episodes through every step with the ground truth (so that every step's target exists),
then searches what the agent kept for any step's target (tests/leakcheck.py): box corners and
centres (within 1.5 pixels, in observation pixels), selectors, texts to type, failure types.
The tree observations (a11y, set-of-marks) are the program's own tree, nothing added, and
the rest of what the agent is given is searched as above. Leaks planted in a real
environment (a target's centre as x/y fields, its box, a text, the centre in a scaled
observation) are each found, and nothing else is.

`make test` runs one short scenario of every program: the local ones here, the programs in
containers in tests/docker/test_leaks_docker.py."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from clinigym.agents import make_agent
from clinigym.core.geometry import Box, Coordinates
from clinigym.envs import agent_context, ground_truth
from clinigym.envs.static import StaticEnv
from clinigym.envs.steps import StepsEnv
from clinigym.run.runner import agent_for
from clinigym.spec.medspot import read_dataset, write_dataset
from clinigym.spec.scenarios import select
from conftest import medspot_annotations
from leakcheck import (
    Planted,
    assert_nothing_located,
    check_free_mode,
    check_steps_modes,
    check_tree_mode,
    drive,
    hoarder_agent,  # noqa: F401  (autouse fixture)
    located,
    scenarios_on,
)

LIVE = scenarios_on("local")


@pytest.mark.parametrize("scenario", LIVE)
def test_live_strict_and_recovery_give_nothing_away(scenario, backends):
    check_steps_modes(scenario, backends(scenario.app))


@pytest.mark.parametrize("mode", ["plan", "goal"])
@pytest.mark.parametrize("scenario", LIVE)
def test_plan_and_goal_modes_give_nothing_away(scenario, mode, backends):
    check_free_mode(scenario, mode, backends(scenario.app))


@pytest.mark.parametrize("mode", ["screenshot+a11y", "som"])
@pytest.mark.parametrize("key", ["aeskulap/open-study-file", "orthanc/delete-study"])
def test_tree_observations_are_the_program_s_own_and_give_nothing_else_away(key, mode):
    check_tree_mode(select(key)[0], mode)


def test_scaled_live_observation_gives_nothing_away(backends):
    scenario = select("orthanc/delete-study")[0]
    env = StepsEnv(scenario, backend=backends("orthanc"), observation_size=(960, 540), recovery=True)
    agent = make_agent("hoarder", env.agent_context(), 3)
    boxes: list[Box] = []
    drive(env, agent, True, boxes)
    env.close()
    assert all(b.x2 <= 960 and b.y2 <= 540 for b in boxes)      # compared in observation pixels
    assert_nothing_located(agent.kept, boxes, set(), env.coords)


# What one observation and info with a target carry, per form: a centre, or a box's two corners.
PER_OBSERVATION = {"fields": 1, "box": 2, "text": 1, "instruction": 1, "screen": 1}


@pytest.mark.parametrize("size, forms", [
    (None, ["fields", "box", "text"]),
    ((960, 540), ["instruction", "screen"]),     # observation pixels, and the screen's
], ids=["full-size", "scaled"])
def test_planted_leaks_are_each_found_and_nothing_else(size, forms, backends):
    """A real program and its real targets; every observation and info the agent is given
    carries the current target in each form; the detector finds exactly what was planted."""
    scenario = select("orthanc/delete-study")[0]
    env = Planted(StepsEnv(scenario, backend=backends("orthanc"), observation_size=size, recovery=True), forms)
    agent = make_agent("hoarder", agent_context(env), 3)
    boxes: list[Box] = []
    drive(env, agent, True, boxes)
    env.close()
    # Recovery: each of the 3 steps' targets is shown twice (before and after a wrong action).
    assert len(boxes) == 3
    assert [key for key, _ in env.planted] == [f for _ in range(6) for f in forms for _ in range(PER_OBSERVATION[f])]
    assert [(f.key, f.point) for f in located(agent.kept, boxes, env.unwrapped.coords)] == env.planted


@pytest.fixture(scope="module")
def keyframes(tmp_path_factory):
    folder = tmp_path_factory.mktemp("medspot")
    tasks = [t for t in read_dataset(medspot_annotations()) if t.software in ("Orthanc", "DICOMscope")]
    write_dataset(tasks, folder)
    rng = np.random.default_rng(0)
    for t in tasks:
        for s in t.steps:
            (folder / s.image_path).parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rng.integers(0, 255, (90, 160, 3), np.uint8)).save(folder / s.image_path)
    return folder


@pytest.mark.parametrize("single_step", [False, True], ids=["strict", "single-step"])
def test_static_modes_give_nothing_away(keyframes, single_step):
    env = StaticEnv(keyframes, observation_size=(320, 180), single_step=single_step)
    agent = agent_for(env, "hoarder", 1)
    truth = ground_truth(env)
    boxes: list[Box] = []
    for task in env.tasks:
        obs, info = env.reset(options={"task": task.key})
        done = False
        while not done:
            proposed = agent.act(obs, info)
            # single-step: the agent's own click (judged, whatever its outcome); strict: the truth
            obs, _, term, trunc, info = env.step(proposed if single_step else truth.action())
            boxes.append(Box(*truth.last_record().target_box))
            done = term or trunc
        agent.act(obs, info)
    # The keyframes (160 x 90) are the screen: scaled 2x to the observation.
    assert_nothing_located(agent.kept, boxes, set(), Coordinates(320, 180, 160, 90))
