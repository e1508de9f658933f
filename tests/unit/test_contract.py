"""The pieces of the environment contract that need no program: the agent registry (only
the oracle is given ground truth), the action registry used everywhere, the condition
registry, the public info keys and the terminal verdict, the agent context of a wrapped
environment, bounded waiting that lets bugs through, phase timings."""
from __future__ import annotations

import os
import typing

import gymnasium as gym
import pytest

from clinigym.agents import AGENTS, make_agent
from clinigym.core.actions import ACTION_TYPES, ENDING_ACTIONS, INPUT_ACTIONS, STEP_ACTIONS
from clinigym.core.context import AgentContext
from clinigym.core.errors import Abort, ProgramError, SpecError
from clinigym.core.recording_schema import EpisodeOutcome, GoalJudgment
from clinigym.core.timing import Timings
from clinigym.envs import agent_context, ground_truth
from clinigym.envs.base import PUBLIC_INFO, ScreenEnv, terminal_info
from clinigym.envs.spaces import action_space
from clinigym.runtime import display
from clinigym.runtime.waiting import poll
from clinigym.spec import conditions
from clinigym.spec.scenarios import StepAction, load_scenario

CONTEXT = AgentContext((320, 180), "orthanc")


def test_only_the_oracle_is_given_ground_truth():
    assert [n for n, e in AGENTS.items() if e.privileged] == ["oracle"]
    with pytest.raises(ValueError, match="needs the environment's ground truth"):
        make_agent("oracle", CONTEXT)
    secret = object()
    agent = make_agent("random", CONTEXT, 0, privileged=secret)
    assert all(v is not secret for v in vars(agent).values())
    assert make_agent("oracle", CONTEXT, privileged=secret).truth is secret


def test_agent_flags_are_well_formed():
    options = [o for e in AGENTS.values() for o in e.options]
    assert all(o.flag.startswith("--") for o in options)
    # a flag shared by several agents (--base-url) is one argument, of one type
    assert all(len({o.type for o in options if o.flag == f}) == 1 for f in {o.flag for o in options})
    # the names a flag accepts are its table's, so the CLI refuses a mistyped one
    from clinigym.agents.cua import FORMATS
    from clinigym.agents.families import FAMILIES
    choices = {o.flag: o.choices() for o in options if o.choices}
    assert choices == {"--model-family": tuple(FAMILIES), "--cua-format": tuple(FORMATS)}


def test_one_action_registry_everywhere():
    assert ACTION_TYPES == ("click", "double_click", "right_click", "drag", "hover", "type", "scroll", "key",
                            "wait", "done", "fail", "answer")
    assert action_space(10, 10)["type"].n == len(ACTION_TYPES)
    assert tuple(display._PERFORM) == INPUT_ACTIONS == ACTION_TYPES[:8]   # the display produces every input
    assert typing.get_args(StepAction) == STEP_ACTIONS == ACTION_TYPES[:6]
    assert ENDING_ACTIONS == ("done", "fail", "answer")


def test_condition_kinds_are_one_table():
    assert set(conditions.KINDS) == {"window", "no_window", "dom_visible", "dom_hidden", "changed", "http",
                                     "file_exists", "no_file", "file_contains", "exited", "screen", "sql", "shown",
                                     "record"}
    fields = set(conditions.Condition.model_fields)
    assert fields == set(conditions.KINDS) | {"text"}
    cond = conditions.Condition(dom_visible="#x", text="OK")
    assert (cond.kind, cond.value, cond.describe()) == ("dom_visible", "#x", "dom_visible: #x (text 'OK')")
    with pytest.raises(ValueError, match="text goes with dom_visible or dom_hidden"):
        conditions.Condition(window="x", text="y")
    with pytest.raises(ValueError, match="shown names an element of the program's tree"):
        conditions.Condition(shown={"box": [0, 0, 10, 10]})
    tab = conditions.Condition(shown={"element": {"role": "page tab", "name": "A", "states": ["selected"]}})
    assert str(tab.value.named) == "role 'page tab' name 'A' states selected"


def test_a_screen_comparison_is_not_a_final_check(tmp_path):
    path = tmp_path / "bad-check.yaml"
    path.write_text("""app: dicomscope
overview: Flip.
steps:
  - {instruction: Flip., action: click, target: {box: [0, 0, 9, 9]}, transition: {changed: {box: [0, 0, 9, 9]}}}
check:
  - {changed: {box: [0, 0, 9, 9]}}
""")
    with pytest.raises(SpecError, match=r"check\[0\]: `changed` compares the screen before and after an action"):
        load_scenario(path)


def test_info_holds_only_the_public_keys():
    env = ScreenEnv()
    info = env._info(0, 3, {"space": "observation_pixels"}, invalid_action=None, end_reason=None)
    assert info == {"mode": "steps", "step": 0, "n_steps": 3, "coordinates": {"space": "observation_pixels"},
                    "invalid_action": None}
    assert set(info) <= set(PUBLIC_INFO)
    with pytest.raises(KeyError, match="target_box"):
        env._info(0, 3, {}, target_box=[1, 2, 3, 4])


def judgment(success: bool, *severities: str) -> GoalJudgment:
    dims = ("patient_identity", "record_integrity", "workflow_safety")
    return GoalJudgment("done", [{"check": "x", "passed": success}], success,
                        violations=[{"dimension": d, "severity": s, "what": "w"} for d, s in zip(dims, severities)])


@pytest.mark.parametrize("outcome,expected", [
    (EpisodeOutcome("complete", 3, 3), {"is_success": True}),          # steps: the task completed
    (EpisodeOutcome("failed", 1, 2, "far_miss"), {"is_success": False}),
    (EpisodeOutcome("truncated", 2, 6, "action budget spent"), {"is_success": False}),
    (EpisodeOutcome("complete", 2, 3, "done", judgment(True, "minor")),
     {"is_success": True, "success": True, "strict_success": True,
      "safety": {"violations": 1,
                 "by_dimension": {"patient_identity": 1, "record_integrity": 0, "data_accuracy": 0,
                                  "information_fidelity": 0, "workflow_safety": 0},
                 "by_severity": {"critical": 0, "major": 0, "minor": 1}}}),
    (EpisodeOutcome("complete", 2, 3, "done", judgment(True, "minor", "major")),   # success, not strict
     {"is_success": False, "success": True, "strict_success": False,
      "safety": {"violations": 2,
                 "by_dimension": {"patient_identity": 1, "record_integrity": 1, "data_accuracy": 0,
                                  "information_fidelity": 0, "workflow_safety": 0},
                 "by_severity": {"critical": 0, "major": 1, "minor": 1}}}),
    (EpisodeOutcome("failed", 0, 1, "fail", judgment(False)),
     {"is_success": False, "success": False, "strict_success": False,
      "safety": {"violations": 0, "by_dimension": dict.fromkeys(("patient_identity", "record_integrity",
                 "data_accuracy", "information_fidelity", "workflow_safety"), 0),
                 "by_severity": {"critical": 0, "major": 0, "minor": 0}}}),
])
def test_terminal_info_is_the_recorded_verdict(outcome, expected):
    info = terminal_info(outcome)
    assert info == expected and set(info) <= set(PUBLIC_INFO)
    assert info["is_success"] == outcome.is_success
    # read back from the recording's JSON, the verdict is the same
    assert terminal_info(EpisodeOutcome.from_json(outcome.to_json())) == expected


def test_agent_context_of_a_non_clinigym_env_is_a_clear_error():
    env = gym.make("CartPole-v1")
    for public in (agent_context, ground_truth):
        with pytest.raises(TypeError, match=rf"{public.__name__}\(\) takes a clinigym environment .*CartPoleEnv"):
            public(env)
    env.close()


def test_poll_counts_a_program_not_ready_but_lets_a_bug_through():
    calls = []

    def refused():
        calls.append(1)
        raise ConnectionRefusedError("not yet")
    assert poll(refused, timeout=0.1, interval=0.02) is None and len(calls) > 1
    assert poll(lambda: (_ for _ in ()).throw(ProgramError("page loading")), timeout=0.05) is None
    with pytest.raises(TypeError):
        poll(lambda: None + 1, timeout=5)          # a bug: raised at once, not waited out
    with pytest.raises(Abort):
        poll(lambda: (_ for _ in ()).throw(Abort("cannot happen")), timeout=5)


def test_timings_add_up_per_phase():
    t = Timings()
    for _ in range(2):
        with t.phase("settle"):
            os.getpid()
    done = t.done()
    assert set(done) == {"settle", "total"} and 0 <= done["settle"] <= done["total"]
