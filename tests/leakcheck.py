"""The leak detector of tests/live/test_leaks.py and tests/docker/test_leaks_docker.py.

An agent that keeps everything it is given (the `Hoarder`) runs an episode driven by the
ground truth (so that every step's target exists); `located` then searches what it kept for
any step's target: box corners and centres within 1.5 observation pixels (and, when the
observation is scaled, within as many screen pixels times the scale, in screen pixels).
A number pair is two numbers side by side in a list or in a string ("click at 812, 44"), or
two numeric fields of one dict in either order ({"x": 812, "y": 44}). `Planted` doctors a
real environment's info and observation with its current target, so a test can show that
`located` finds each planted form and nothing else."""
from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, is_dataclass
from itertools import permutations
from typing import Any

import gymnasium as gym
import pytest

from clinigym.agents import AGENTS, AgentEntry
from clinigym.core.geometry import Box, Coordinates
from clinigym.core.judge import FAILURE_TYPES, LIVE_OUTCOMES
from clinigym.core.marks import marks_of, marks_to_json
from clinigym.envs import PUBLIC_INFO, ground_truth
from clinigym.envs.goal import GoalEnv
from clinigym.envs.steps import StepsEnv
from clinigym.run.runner import agent_for
from clinigym.runtime.backends import default_kind
from clinigym.spec.apps import load_app
from clinigym.spec.scenarios import all_scenarios, first_per_program

TOLERANCE = 1.5

# One short scenario of every program runs in `make test` (with DOM selectors, a typed text,
# a web viewer's, the EHR's, two desktop viewers'); the first of every program, in test-all.
FAST = {"orthanc/delete-study", "dicomscope/medspot-18-modify-cw", "ohif/last-slice-rotate",
        "aeskulap/bone-window-invert", "gnuhealth/info-age",
        "itksnap/info-slice-count", "ginkgocadx/info-accession-number"}


def scenarios_on(kind: str) -> list:
    """`make test`'s scenarios and the first of every program, of the programs whose default
    backend is `kind`; the latter marked slow."""
    chosen = {s.key: s for s in first_per_program(all_scenarios(), 1) + [s for s in all_scenarios() if s.key in FAST]}
    return [pytest.param(s, id=s.key, marks=[] if s.key in FAST else [pytest.mark.slow])
            for _, s in sorted(chosen.items()) if default_kind(load_app(s.app)) == kind]


# A wrong action that changes nothing in any program (so the ground truth still applies after it).
HARMLESS = {"type": "key", "keys": "shift"}


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


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def pairs(value: Any, key: str = "") -> Iterator[tuple[str, tuple[float, float]]]:
    """Every number pair in a structure, with the key of the dict field that holds it."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if isinstance(value, dict):
        fields = [float(v) for v in value.values() if _number(v)]
        yield from ((key, p) for p in permutations(fields, 2))
        for k, v in value.items():
            yield from pairs(v, str(k))
    elif isinstance(value, str):
        found = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", value)]
        yield from ((key, p) for p in zip(found, found[1:]))
    elif isinstance(value, (list, tuple)):
        flat = [float(v) for v in value if _number(v)]
        yield from ((key, p) for p in zip(flat, flat[1:]))
        for v in value:
            if not _number(v):
                yield from pairs(v, key)


def strings(value: Any) -> list[str]:
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [str(k), *strings(v)]]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


def points_of(box: Box) -> list[tuple[float, float]]:
    return [(box.x1, box.y1), (box.x2, box.y2), ((box.x1 + box.x2) / 2, (box.y1 + box.y2) / 2)]


@dataclass(frozen=True)
class Finding:
    key: str                      # the dict field holding the pair ("" at the top)
    point: tuple[float, float]


def located(kept: list, boxes: list[Box], coords: Coordinates) -> list[Finding]:
    """Every number pair in `kept` that lies on a corner or centre of one of `boxes` (observation
    pixels), in observation pixels or, scaled, in screen pixels; in the order kept."""
    sx, sy = coords.scale
    targets = [(p, TOLERANCE) for b in boxes for p in points_of(b)]
    if (sx, sy) != (1.0, 1.0):
        targets += [((x * sx, y * sy), TOLERANCE * max(sx, sy)) for b in boxes for x, y in points_of(b)]
    # The two sizes are the public coordinate contract (a full-screen box has them as a corner).
    public = {(coords.obs_w, coords.obs_h), (coords.screen_w, coords.screen_h)}
    return [Finding(key, (a, b)) for item in kept for key, (a, b) in pairs(item)
            if (a, b) not in public and any(abs(a - x) <= tol and abs(b - y) <= tol for (x, y), tol in targets)]


def disclosed(kept: list, secrets: set[str]) -> list[str]:
    """Strings the agent was given that hold a judged outcome or a secret (the observations'
    instructions excepted: they are given on purpose)."""
    texts = [s for item in kept if not (isinstance(item, dict) and "instruction" in item) for s in strings(item)]
    judged_words = set(FAILURE_TYPES) | set(LIVE_OUTCOMES)
    return [s for s in texts if s in judged_words or any(secret in s for secret in secrets)]


def assert_nothing_located(kept: list, boxes: list[Box], secrets: set[str], coords: Coordinates):
    assert boxes, "the episodes judged no target: nothing was checked"
    infos = [k for k in kept if isinstance(k, dict) and "coordinates" in k]
    assert infos and all(set(i) <= set(PUBLIC_INFO) for i in infos)
    assert located(kept, boxes, coords) == []
    assert disclosed(kept, secrets) == []


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


def record_boxes(env, boxes: list[Box]) -> None:
    record = ground_truth(env).last_record()
    boxes += [Box(*b) for b in (record.target_box, record.end_box) if b]


def drive(env, agent, wrong_first: bool, boxes: list[Box]):
    """One steps-mode episode: the agent sees every observation and info; the action sent is the
    ground truth, after one wrong action per step in recovery mode."""
    truth = ground_truth(env)
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
        record_boxes(env, boxes)
        done = term or trunc
    assert info["end_reason"] == "completed", (info, truth.last_record())
    agent.act(obs, info)       # the agent sees the last observation and info too


def check_steps_modes(scenario, backend) -> None:
    """Strict and recovery episodes of `scenario` give the agent nothing that locates a target."""
    for recovery in (False, True):
        env = StepsEnv(scenario, backend=backend, recovery=recovery,
                       max_actions=2 * len(scenario.steps) if recovery else None)
        agent = agent_for(env, "hoarder", 7, secret_option="kept too")
        boxes: list[Box] = []
        drive(env, agent, recovery, boxes)
        env.close()
        assert_nothing_located(agent.kept, boxes, secrets_of(scenario), env.coords)


TREE_FIELDS = ("a11y", "a11y_json", "marks")   # the program's own tree, and its marks


def check_tree_mode(scenario, mode: str) -> None:
    """A steps episode observed in a mode that reads the program's tree (`mode` has a
    screenshot too). The backend's reads are kept as they come from the program: at every
    observation the tree fields are exactly that read's text and JSON, or its marks
    (clinigym adds nothing; a second read is no reference: GTK makes table cells anew on each
    read), and none of the scenario's selectors is in them. Everything else the agent is
    given locates no target."""
    env = StepsEnv(scenario, obs_mode=mode)
    reads: list = []
    program_read = env.backend.elements
    env.backend.elements = lambda *a, **k: reads.append(program_read(*a, **k)) or reads[-1]
    agent = agent_for(env, "hoarder", 7)
    truth = ground_truth(env)
    boxes: list[Box] = []
    selectors = {t.selector for s in scenario.steps for t in (s.target, s.end_target) if t and t.selector}
    try:
        obs, info = env.reset(seed=0)
        agent.reset(0)
        done = False
        while True:
            tree = reads[-1].to_obs(env.coords)
            given = {k: obs[k] for k in TREE_FIELDS if k in obs}
            assert given and given == {k: v for k, v in {"a11y": tree.to_text(), "a11y_json": tree.to_json(),
                                                          "marks": marks_to_json(marks_of(tree))}.items()
                                       if k in given}
            assert not any(sel in text for sel in selectors for text in given.values())
            agent.act(obs, info)
            if done:
                break
            obs, reward, term, trunc, info = env.step(truth.action())
            record_boxes(env, boxes)
            done = term or trunc
    finally:
        env.close()
    assert info["end_reason"] == "completed", info
    assert len(reads) == len(scenario.steps) + 1        # one read per observation
    rest = [{k: v for k, v in item.items() if k not in TREE_FIELDS} if isinstance(item, dict) else item
            for item in agent.kept]
    assert_nothing_located(rest, boxes, secrets_of(scenario), env.coords)


def check_free_mode(scenario, mode: str, backend) -> None:
    """A plan or goal episode: a harmless wrong action before every reference action (as in
    recovery), the reference path, then its ending; the judged records hold the reference targets."""
    env = GoalEnv(scenario, mode, backend=backend)
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
        record_boxes(env, boxes)
        done = term or trunc
    agent.act(obs, info)
    env.close()
    assert info["end_reason"] in ("done", "answer") and reward == 1.0, info
    # The plan's instructions (and a text to type among them) are given on purpose: the
    # observation's instruction is not searched for texts, as in the steps mode.
    assert_nothing_located(agent.kept, boxes, secrets_of(scenario), env.coords)


# A planted leak: (current target in observation pixels, coordinates, observation, info) -> the
# (key, point) pairs it put in the observation or info, in the order an agent is given them.
Plant = Callable[[Box, Coordinates, dict, dict], list[tuple[str, tuple[float, float]]]]


def _fields(target, coords, obs, info):
    info["fields"] = {"x": target.center[0], "y": target.center[1]}
    return [("fields", target.center)]


def _box(target, coords, obs, info):
    info["box"] = target.as_list()
    return [("box", (target.x1, target.y1)), ("box", (target.x2, target.y2))]


def _text(target, coords, obs, info):
    info["text"] = "click at {}, {}".format(*target.center)
    return [("text", target.center)]


def _instruction(target, coords, obs, info):
    obs["instruction"] += " It is at ({}, {}).".format(*target.center)
    return [("instruction", target.center)]


def _screen_fields(target, coords, obs, info):
    x, y = coords.to_screen(target.center)
    info["screen"] = {"x": x, "y": y}
    return [("screen", (x, y))]


PLANTS: dict[str, Plant] = {"fields": _fields, "box": _box, "text": _text,
                            "instruction": _instruction, "screen": _screen_fields}


class Planted(gym.Wrapper):
    """A real environment whose every observation and info, while a step's target exists,
    carries that target in the given forms; `planted` lists what was put where, in order."""

    def __init__(self, env: gym.Env, forms: list[str]):
        super().__init__(env)
        self.forms = [PLANTS[f] for f in forms]
        self.planted: list[tuple[str, tuple[float, float]]] = []

    def _plant(self, obs, info):
        target = ground_truth(self.env).target()
        if target is not None:
            placed = [p for form in self.forms for p in form(target, self.env.unwrapped.coords, obs, info)]
            # The agent is given the observation before the info.
            self.planted += sorted(placed, key=lambda p: p[0] != "instruction")
        return obs, info

    def reset(self, **kwargs):
        return self._plant(*self.env.reset(**kwargs))

    def step(self, action):
        obs, reward, term, trunc, info = self.env.step(action)
        obs, info = self._plant(obs, info)
        return obs, reward, term, trunc, info
