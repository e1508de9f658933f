"""Nothing an agent receives locates the answer.

An agent that keeps everything it is given (its construction arguments, every observation,
every info) runs every mode: strict and recovery on the live programs, the plan and goal
modes, a scaled live observation, the static keyframe mode and its single-step variant. The test drives the
episodes through every step with the ground truth (so that every step's target exists),
then searches what the agent kept for any step's target: box corners and centres
(within 1.5 pixels, in observation pixels), selectors, texts to type, failure types."""
from __future__ import annotations

import copy
import re
from dataclasses import asdict, is_dataclass

import numpy as np
import pytest
from PIL import Image

from clinigym.agents import AGENTS, AgentEntry, make_agent
from clinigym.core.geometry import Box
from clinigym.core.judge import FAILURE_TYPES, LIVE_OUTCOMES
from clinigym.envs import PUBLIC_INFO, ground_truth
from clinigym.envs.goal import GoalEnv
from clinigym.envs.static import StaticEnv
from clinigym.envs.steps import StepsEnv
from clinigym.run.runner import agent_for
from clinigym.spec.medspot import read_dataset, write_dataset
from clinigym.spec.scenarios import all_scenarios, first_per_program, select
from conftest import ANNOTATIONS

TOLERANCE = 1.5
# The first scenario of every program; `make test` runs one with DOM selectors, one with a
# typed text and a web viewer's (the environment's code is the same for every program).
FAST = {"orthanc/delete-study", "dicomscope/medspot-18-modify-cw", "ohif/last-slice-rotate"}
LIVE = [pytest.param(s, id=s.key, marks=[] if s.key in FAST else [pytest.mark.slow])
        for s in sorted({s.key: s for s in first_per_program(all_scenarios(), 1)
                         + [s for s in all_scenarios() if s.key in FAST]}.values(), key=lambda s: s.key)]


class Hoarder:
    """Keeps a deep copy of everything it is given; proposes clicks on a fixed grid."""
    name = "hoarder"

    def __init__(self, context, seed=None, **options):
        self.kept: list = [copy.deepcopy(context), seed, copy.deepcopy(options)]
        self.n = 0

    def reset(self, seed=None):
        self.kept.append(seed)

    def act(self, observation, info):
        self.kept.append({k: copy.deepcopy(v) for k, v in observation.items() if k != "screenshot"})
        self.kept.append(observation["screenshot"].shape)
        self.kept.append(copy.deepcopy(info))
        self.n += 1
        h, w = observation["screenshot"].shape[:2]
        return {"type": "click", "x": (37 * self.n) % w, "y": (53 * self.n) % h}


@pytest.fixture(autouse=True)
def hoarder_agent(monkeypatch):
    monkeypatch.setitem(AGENTS, "hoarder", AgentEntry("hoarder", "keeps everything", Hoarder))


def numbers(value) -> list[list[float]]:
    """Every sequence of numbers in a structure, strings' numbers included (a dict's
    values are looked at one by one: two fields side by side are not a point)."""
    if is_dataclass(value):
        value = asdict(value)
    if isinstance(value, dict):
        return [seq for v in value.values() for seq in numbers(v)]
    if isinstance(value, str):
        return [[float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", value)]]
    if isinstance(value, (list, tuple)):
        flat = [float(v) for v in value if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return [flat] + [seq for v in value if not isinstance(v, (int, float)) for seq in numbers(v)]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [[float(value)]]
    return []


def strings(value) -> list[str]:
    if is_dataclass(value):
        value = asdict(value)
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [str(k), *strings(v)]]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


def points_of(box: Box) -> list[tuple[float, float]]:
    return [(box.x1, box.y1), (box.x2, box.y2), ((box.x1 + box.x2) / 2, (box.y1 + box.y2) / 2)]


def assert_nothing_located(kept: list, boxes: list[Box], secrets: set[str], size: tuple[int, int]):
    assert boxes, "the episodes judged no target: nothing was checked"
    infos = [k for k in kept if isinstance(k, dict) and "coordinates" in k]
    assert infos and all(set(i) <= set(PUBLIC_INFO) for i in infos)
    targets = [p for b in boxes for p in points_of(b)]
    found = []
    for item in kept:
        for seq in numbers(item):
            for a, b in zip(seq, seq[1:]):
                if (a, b) == size:     # the observation size: the public coordinate contract
                    continue
                found += [(a, b, t) for t in targets if abs(a - t[0]) <= TOLERANCE and abs(b - t[1]) <= TOLERANCE]
    assert found == []
    texts = [s for item in kept if not (isinstance(item, dict) and "instruction" in item) for s in strings(item)]
    judged_words = set(FAILURE_TYPES) | set(LIVE_OUTCOMES)
    assert [s for s in texts if s in judged_words or any(secret in s for secret in secrets)] == []


# A wrong action that changes nothing in any program (so the ground truth still applies after it).
HARMLESS = {"type": "key", "keys": "shift"}


def drive(env, agent, truth, wrong_first: bool, boxes: list[Box]):
    """One episode: the agent sees every observation and info; the action sent is the
    ground truth, after one wrong action per step in recovery mode."""
    obs, info = env.reset(seed=0)
    agent.reset(0)
    done = False
    while not done:
        agent.act(obs, info)
        if wrong_first:
            obs, reward, term, trunc, info = env.step(HARMLESS)
            assert reward == 0.0 and not (term or trunc), info
            agent.act(obs, info)   # what used to leak: the judged outcome of a wrong action
        obs, reward, term, trunc, info = env.step(truth.action())
        record = truth.last_record()
        boxes += [Box(*b) for b in (record.target_box, record.end_box) if b]
        done = term or trunc
    assert info["end_reason"] == "completed", (info, record)
    agent.act(obs, info)       # the agent sees the last observation and info too


def secrets_of(scenario) -> set[str]:
    out = set()
    for step in scenario.steps:
        for target in (step.target, step.end_target):
            if target is not None and target.selector:
                out.add(target.selector)
        if step.text:
            out.add(step.text)
        out |= {c.value for c in step.transition if isinstance(c.value, str) and len(c.value) > 3}
    return out


@pytest.mark.parametrize("scenario", LIVE)
def test_live_strict_and_recovery_give_nothing_away(scenario, backends):
    for recovery in (False, True):
        env = StepsEnv(scenario, backend=backends(scenario.app), recovery=recovery,
                      max_actions=2 * len(scenario.steps) if recovery else None)
        agent = agent_for(env, "hoarder", 7, secret_option="kept too")
        boxes: list[Box] = []
        drive(env, agent, ground_truth(env), recovery, boxes)
        env.close()
        assert_nothing_located(agent.kept, boxes, secrets_of(scenario), (env.coords.obs_w, env.coords.obs_h))


@pytest.mark.parametrize("mode", ["plan", "goal"])
@pytest.mark.parametrize("scenario", LIVE)
def test_plan_and_goal_modes_give_nothing_away(scenario, mode, backends):
    """Free actions: a harmless wrong action before every reference action (as in recovery),
    the reference path, then its ending; the judged records hold the reference targets."""
    env = GoalEnv(scenario, mode, backend=backends(scenario.app))
    agent = agent_for(env, "hoarder", 5)
    truth = ground_truth(env)
    boxes: list[Box] = []
    obs, info = env.reset(seed=0)
    done = False
    while not done:
        agent.act(obs, info)
        action = truth.action()
        if action.type not in ("done", "answer"):
            obs, reward, term, trunc, info = env.step(HARMLESS)
            assert reward == 0.0 and not (term or trunc), info
            agent.act(obs, info)
            action = truth.action()
        obs, reward, term, trunc, info = env.step(action)
        record = truth.last_record()
        boxes += [Box(*b) for b in (record.target_box, record.end_box) if b]
        done = term or trunc
    agent.act(obs, info)
    env.close()
    assert info["end_reason"] in ("done", "answer") and reward == 1.0, info
    # The plan's instructions (and a text to type among them) are given on purpose: the
    # observation's instruction is not searched for texts, as in the steps mode.
    assert_nothing_located(agent.kept, boxes, secrets_of(scenario), (env.coords.obs_w, env.coords.obs_h))


def test_scaled_live_observation_gives_nothing_away(backends):
    scenario = select("orthanc/delete-study")[0]
    env = StepsEnv(scenario, backend=backends("orthanc"), observation_size=(960, 540), recovery=True)
    agent = make_agent("hoarder", env.agent_context(), 3)
    boxes: list[Box] = []
    drive(env, agent, ground_truth(env), True, boxes)
    env.close()
    assert all(b.x2 <= 960 and b.y2 <= 540 for b in boxes)      # compared in observation pixels
    assert_nothing_located(agent.kept, boxes, secrets_of(scenario), (960, 540))


@pytest.fixture(scope="module")
def keyframes(tmp_path_factory):
    folder = tmp_path_factory.mktemp("medspot")
    tasks = [t for t in read_dataset(ANNOTATIONS) if t.software in ("Orthanc", "DICOMscope")]
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
    assert_nothing_located(agent.kept, boxes, set(), (320, 180))
