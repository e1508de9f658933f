"""What the computer-use agent sends and reads in each observation mode (issue #37), over
real HTTP on loopback, with exact request bodies: the tree text or the mark list with the
current screenshot, no image (and past turns as text) without one, a call that names a
mark instead of coordinates in each format's syntax, and the refusals."""
from __future__ import annotations

import json

import pytest
from test_agent_observations import HD, MARK_LIST, MARKS, MARKS_LEAD, SCREEN, TREE, TREE_LEAD, Fixed, observation

from clinigym.agents.cua import CuaAgent, get_format
from clinigym.agents.cua.history import PREVIOUS, History
from clinigym.agents.families.prompts import image_part, system, text_part, user
from clinigym.agents.http import data_url
from clinigym.core.actions import ACTION_TYPES, Action
from clinigym.core.context import AgentContext
from clinigym.core.errors import AgentError

TASK = "Anonymize the MR brain study of patient PHANTOM^BOB in Orthanc."
URL = data_url(SCREEN, HD)


def hint(fmt: str) -> str:
    return f" To act on a marked element, you may name its mark instead of coordinates: {get_format(fmt).mark_hint}."


def play(fmt: str, mode: str, *answers, turns: int = 1, **options):
    """(the actions, the request bodies) of `turns` turns of the agent on the same observation."""
    with Fixed(*answers) as server:
        agent = CuaAgent(AgentContext(HD, observation=mode, mode="goal"), format=fmt, base_url=server.url, **options)
        actions = [agent.act({**observation(mode), "instruction": TASK}, {}) for _ in range(turns)]
    return actions, server.requests


def tool_call(**arguments) -> str:
    return f"<tool_call>\n{json.dumps({'name': 'computer_use', 'arguments': arguments})}\n</tool_call>"


def test_qwen_marks_with_the_current_screenshot_and_a_mark_call():
    fmt = get_format("qwen3-vl")
    (action,), (body,) = play("qwen3-vl", "som", tool_call(action="left_click", mark=2))
    assert body["messages"] == [
        system(fmt.system(fmt.sizes(HD))),
        user(text_part(PREVIOUS.format(task=TASK, previous="None")), image_part(URL),
             text_part(MARKS_LEAD + hint("qwen3-vl") + "\n" + MARK_LIST))]
    assert action.type == "click" and action.point == (291.0, 421.0)
    assert action.meta["marks"] == [MARKS[1].as_dict()] and action.meta["native"] == "left_click"


def test_uitars_marks_for_both_ends_of_a_drag():
    answer = "Thought: move it\nAction: drag(mark=1, end_mark=3)\n\nclick(mark=2)"
    (drag, click), (body,) = play("ui-tars-1.5", "som", answer, turns=2)
    assert body["messages"][-1] == user(image_part(data_url(SCREEN, get_format("ui-tars-1.5").sizes(HD).sent)),
                                        text_part(MARKS_LEAD + hint("ui-tars-1.5") + "\n" + MARK_LIST))
    assert (drag.type, drag.point, drag.end_point) == ("drag", (52.0, 19.5), (1221.0, 77.0))
    assert drag.meta["marks"] == [MARKS[0].as_dict(), MARKS[2].as_dict()]
    assert click.point == (291.0, 421.0) and click.meta["queued"] and click.meta["marks"] == [MARKS[1].as_dict()]


@pytest.mark.parametrize("fmt, answer, native", [
    ("ui-tars-1.5", "Action: click(mark=99)", "click"),
    ("qwen2.5-vl", tool_call(action="left_click", mark=99), "left_click"),
    ("json", '{"type": "click", "mark": 99}', "click"),
])
def test_an_unknown_mark_refuses_the_call_with_the_reason(fmt, answer, native):
    (action,), _ = play(fmt, "som", answer)
    assert isinstance(action, dict) and action["type"] == native     # the environment reports it as invalid
    assert action["meta"]["problem"] == "no mark 99 on this screen (its marks are 1 to 3)"


def test_json_marks_in_place_of_points():
    answer = '{"type": "drag", "mark": 1, "end_mark": 3}\n{"type": "type", "mark": 2, "text": "BOB"}'
    (drag, typed), _ = play("json", "som", answer, turns=2)
    assert (drag.point, drag.end_point) == ((52.0, 19.5), (1221.0, 77.0))
    assert (typed.type, typed.point, typed.text) == ("type", (291.0, 421.0), "BOB")


def test_outside_the_som_mode_a_mark_names_nothing():
    # never told of marks, the model's "mark" is an unknown argument: the call as without it
    (action,), (body,) = play("json", "screenshot", '{"type": "click", "mark": 2, "point": [10, 20]}')
    assert action.point == (10.0, 20.0) and "marks" not in action.meta
    fmt = get_format("json")
    assert body["messages"] == fmt.messages(TASK, History(), URL, fmt.sizes(HD), ACTION_TYPES)


def test_the_tree_alone_no_image_and_past_turns_as_text():
    fmt = get_format("json")
    first = '{"type": "click", "point": [52, 19]}'
    (click, done), bodies = play("json", "a11y", first, '{"type": "done"}', turns=2, images=3)
    assert (click.point, done.type) == ((52.0, 19.0), "done")
    sizes = fmt.sizes(HD)
    tree = text_part(TREE_LEAD + TREE)
    assert [b["messages"] for b in bodies] == [
        [system(fmt.system(sizes, ACTION_TYPES)), user(text_part(PREVIOUS.format(task=TASK, previous="None")), tree)],
        [system(fmt.system(sizes, ACTION_TYPES)),
         user(text_part(PREVIOUS.format(task=TASK, previous=f"Step 1: {first}")), tree)]]


def test_uitars_without_screenshots():
    (a, b), bodies = play("ui-tars-1.5", "a11y", "Action: click(start_box='(100,200)')", "Action: finished()",
                          turns=2)
    layout = [(m["role"], [p["type"] for p in m["content"]] if isinstance(m["content"], list) else "text")
              for m in bodies[1]["messages"]]
    assert layout == [("user", ["text"]), ("assistant", "text"), ("user", ["text"])]
    assert bodies[1]["messages"][-1] == user(text_part(TREE_LEAD + TREE)) and b.type == "done"


def test_a_cut_tree():
    (_,), (body,) = play("qwen3-vl", "screenshot+a11y", tool_call(action="wait"), a11y_chars=120)
    assert body["messages"][-1]["content"][-1] == text_part(
        TREE_LEAD + '[1] RootWebArea "CLINIGYM » Patient" (0,0,1920,1080) focusable,focused\n'
                    '  [2] link "Lookup" (5,4,99,35) focusable\n'
                    "[cut here: 2 of 4 lines left out; a request carries at most 120 characters of them]")


def test_openai_computer_use_gets_the_marks_after_its_call_outputs():
    call = {"type": "computer_call", "call_id": "call_1", "pending_safety_checks": [],
            "action": {"type": "click", "button": "left", "x": 291, "y": 421}}
    message = {"type": "message", "content": [{"type": "output_text", "text": ""}]}
    (click, done), (first, second) = play("openai-computer-use", "som", [call], [message], turns=2)
    text = {"type": "input_text", "text": MARKS_LEAD + "\n" + MARK_LIST}    # no mark answers: x and y only
    assert first["input"] == [{"role": "user", "content": [{"type": "input_text", "text": TASK},
                                                           {"type": "input_image", "image_url": URL}, text]}]
    assert second["input"] == [
        {"type": "computer_call_output", "call_id": "call_1", "acknowledged_safety_checks": [],
         "output": {"type": "input_image", "image_url": URL}},
        {"role": "user", "content": [text]}]
    assert click == Action("click", (291.0, 421.0), meta=click.meta) and done.type == "done"


def test_openai_computer_use_needs_a_screenshot():
    with pytest.raises(AgentError, match=r"the openai-computer-use format answers every call with a screenshot: "
                                         r"run it with an observation mode that gives one \(screenshot, "
                                         r"screenshot\+a11y, som\)"):
        CuaAgent(AgentContext(HD, observation="a11y"), format="openai-computer-use")
    assert CuaAgent(AgentContext(HD, observation="som"), format="openai-computer-use").format.name == \
        "openai-computer-use"
