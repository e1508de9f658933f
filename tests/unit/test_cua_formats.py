"""Computer-use formats (clinigym/agents/cua): published model outputs parsed into the
exact environment actions, the models' own endings mapped onto done()/fail()/answer(),
calls without an equivalent refused, and writer -> parser round trips over every action
kind within each format's coordinate quantum. Pure unit tests."""
from __future__ import annotations

import json

import pytest

from clinigym.agents.cua import FORMATS, Unexpressible, get_format
from clinigym.agents.cua.base import env_key, key_combo, notches
from clinigym.agents.cua.history import History
from clinigym.agents.cua.json_actions import SAMPLES
from clinigym.agents.families import prompts
from clinigym.core.actions import ACTION_TYPES, Action

HD = (1920, 1080)


def parse(name, answer, cursor=None, size=HD):
    """The steps of one answer (a reply dict for the Responses API, text otherwise)."""
    fmt = get_format(name)
    sizes = fmt.sizes(size)
    return fmt.parse(answer, sizes) if fmt.api == "responses" else fmt.parse(answer, sizes, cursor)


def actions(reading):
    return [s.action for s in reading.steps]


def same(got: Action, want: Action, tol: float = 1e-9) -> bool:
    """Equal, points within `tol` pixels."""
    def near(p, q):
        return (p is None) == (q is None) and (p is None or all(abs(a - b) <= tol for a, b in zip(p, q)))
    return (got.type, got.text, got.keys, got.scroll) == (want.type, want.text, want.keys, want.scroll) and \
        near(got.point, want.point) and near(got.end_point, want.end_point)


# --- UI-TARS-1.5 ----------------------------------------------------------------------
# Sent size for 1920x1080: smart_resize(1080, 1920, 28, 100*28*28, 16384*28*28) = 1092x1932,
# so x_obs = x * 1920 / 1932 and y_obs = y * 1080 / 1092.
TX, TY = 1920 / 1932, 1080 / 1092


def test_uitars_readme_deploy_expected_output():
    # bytedance/UI-TARS README_deploy.md, "Expected Output" of the API example.
    text = ("Thought: 我看到Preferences窗口已经打开了，但这里显示的都是系统资源相关的设置。要设置图片的颜色模式，"
            "我得先看看左侧的选项列表。嗯，\"Color Management\"这个选项看起来很有希望，应该就是处理颜色管理的地方。"
            "让我点击它看看里面有什么选项。\nAction: click(start_box='(177,549)')")
    reading = parse("ui-tars-1.5", text)
    assert actions(reading) == [Action("click", (177 * TX, 549 * TY))]
    assert reading.extra["thought"].startswith("我看到Preferences窗口") and reading.extra["thought"].endswith("选项。")
    assert reading.steps[0].native == "click(start_box='(177,549)')"


@pytest.mark.parametrize("text, want", [
    # codes/README.md: "Action: click(point='<point>200 300</point>')" (the parser's Doubao form)
    ("Thought: Click the button\nAction: click(point='<point>200 300</point>')", Action("click", (200 * TX, 300 * TY))),
    # codes/tests/action_parser_test.py: box tokens around the point
    ("Thought: test\nAction: click(start_box='<|box_start|>(112,224)<|box_end|>')",
     Action("click", (112 * TX, 224 * TY))),
    # codes/README.md: "Action: scroll(start_box='(800,200)', end_box='(200,800)')", a gesture: press, move, release
    ("Action: scroll(start_box='(800,200)', end_box='(200,800)')",
     Action("drag", (800 * TX, 200 * TY), (200 * TX, 800 * TY))),
    # the COMPUTER_USE action space, one call each
    ("Action: left_double(start_box='<|box_start|>(10,20)<|box_end|>')", Action("double_click", (10 * TX, 20 * TY))),
    ("Action: right_single(start_box='(10,20)')", Action("right_click", (10 * TX, 20 * TY))),
    ("Action: drag(start_box='(10,20)', end_box='(30,40)')", Action("drag", (10 * TX, 20 * TY), (30 * TX, 40 * TY))),
    # a box of four numbers is read as its centre
    ("Action: click(start_box='(10,20,30,40)')", Action("click", (20 * TX, 30 * TY))),
    # "hotkey(key='ctrl c') # Split keys with a space and use lowercase." (the Doubao prompt's line)
    ("Action: hotkey(key='ctrl c')", Action("key", keys="ctrl+c")),
    ("Action: hotkey(key='arrowleft')", Action("key", keys="left")),
    # "If you want to submit your input, use \n at the end of content": typed as Return
    ("Action: type(content='PHANTOM^ALICE\\n')", Action("type", text="PHANTOM^ALICE\n")),
    ("Action: type(content='it\\'s')", Action("type", text="it's")),
    ("Action: type(content='it's')", Action("type", text="it's")),   # unescaped, as action_parser tolerates
    ("Action: scroll(start_box='(10,20)', direction='down')", Action("scroll", (10 * TX, 20 * TY), scroll=(0, 5))),
    ("Action: scroll(start_box='(10,20)', direction='left')", Action("scroll", (10 * TX, 20 * TY), scroll=(-5, 0))),
    ("Action: wait()", Action("wait")),
    # its own ending: finished(content) is the model's report; empty, a plain completion
    ("Action: finished(content='The study is deleted.')", Action("answer", text="The study is deleted.")),
    ("Action: finished()", Action("done")),
    ("Action: finished(content='')", Action("done")),
    # UI-TARS v1's "call_user() # ... when the task is unsolvable"
    ("Action: call_user()", Action("fail", text="call_user()")),
    # wrapped in the output format's code fence
    ("```\nThought: t\nAction: wait()\n```", Action("wait")),
])
def test_uitars_calls(text, want):
    got = actions(parse("ui-tars-1.5", text))
    assert len(got) == 1 and same(got[0], want), got


def test_uitars_several_calls_and_refusals():
    # action_parser.py splits the Action part on ")\n\n": several calls, in order
    reading = parse("ui-tars-1.5", "Action: click(start_box='(10,20)')\n\ntype(content='abc')")
    assert actions(reading) == [Action("click", (10 * TX, 20 * TY)), Action("type", text="abc")]
    # MOBILE_USE's long_press and a keydown have no equivalent; a bare scroll needs a pointer position
    for text, name in [("Action: long_press(start_box='(10,20)')", "long_press"),
                       ("Action: keydown(key='shift')", "keydown"),
                       ("Action: scroll(direction='down')", "scroll"),
                       ("Action: click(start_box='')", "click"),
                       ("Action: scroll(start_box='(1,2)', direction='sideways')", "scroll")]:
        (step,) = parse("ui-tars-1.5", text).steps
        assert step.action is None and step.name == name and step.problem, text
    # a scroll without a point scrolls at the pointer, where the last pointer action left it
    (step,) = parse("ui-tars-1.5", "Action: scroll(direction='up')", cursor=(5.0, 6.0)).steps
    assert step.action == Action("scroll", (5.0, 6.0), scroll=(0, -5))
    assert parse("ui-tars-1.5", "I am not sure what to do.").steps == []
    assert parse("ui-tars-1.5", "<think>Action: click(start_box='(1,2)')</think>no action").steps == []
    (step,) = parse("ui-tars-1.5", "Action: click(start_box='(1,2)'").steps   # cut off mid-call
    assert step.action is None and step.name == "unreadable"


# --- Qwen2.5-VL and Qwen3-VL --------------------------------------------------------------
# The answer shape of qwen-agent's Nous template: <tool_call>\n{"name": <function-name>,
# "arguments": <args-json-object>}\n</tool_call> (the cookbooks read it with
# output_text.split('<tool_call>\n')[1].split('\n</tool_call>')[0]).

def call(action, **args):
    return "<tool_call>\n" + json.dumps({"name": "computer_use", "arguments": {"action": action, **args}}) + \
        "\n</tool_call>"


def test_qwen_coordinates():
    # Qwen3-VL: relative on 1000 (computer_use.ipynb: coordinate / 1000 * width): 500/1000*1920 = 960.
    assert actions(parse("qwen3-vl", call("left_click", coordinate=[500, 250]))) == [Action("click", (960.0, 270.0))]
    # Qwen2.5-VL: pixels of the 1932x1092 image sent: 966 * 1920/1932 = 960, 546 * 1080/1092 = 540.
    assert actions(parse("qwen2.5-vl", call("left_click", coordinate=[966, 546]))) == [Action("click", (960.0, 540.0))]


def test_qwen_mobile_use_is_not_computer_use():
    # QwenLM/Qwen3-VL cookbooks/mobile_agent.ipynb prints this assistant turn (the mobile_use function)
    text = ('<tool_call>\n{"name": "mobile_use", "arguments": {"action": "click", "coordinate": [935, 406]}}'
            '\n</tool_call>')
    (step,) = parse("qwen2.5-vl", text).steps
    assert step.action is None and step.name == "mobile_use" and "not the computer_use function" in step.problem


R = 1.92, 1.08     # Qwen3-VL: observation pixels per unit of 1000 at 1920x1080


@pytest.mark.parametrize("text, cursor, want", [
    (call("right_click", coordinate=[100, 100]), None, Action("right_click", (100 * R[0], 100 * R[1]))),
    (call("double_click", coordinate=[100, 100]), None, Action("double_click", (100 * R[0], 100 * R[1]))),
    (call("mouse_move", coordinate=[100, 100]), None, Action("hover", (100 * R[0], 100 * R[1]))),
    # the tool clicks where the cursor is when no coordinate is given
    (call("left_click"), (7.0, 8.0), Action("click", (7.0, 8.0))),
    (call("left_click_drag", coordinate=[100, 100]), (7.0, 8.0), Action("drag", (7.0, 8.0), (100 * R[0], 100 * R[1]))),
    (call("type", text="PHANTOM"), None, Action("type", text="PHANTOM")),
    (call("key", keys=["ctrl", "s"]), None, Action("key", keys="ctrl+s")),
    (call("key", keys=["f5"]), None, Action("key", keys="F5")),
    # "Positive values scroll up, negative values scroll down": -3 -> 3 notches down
    (call("scroll", coordinate=[100, 100], pixels=-3), None, Action("scroll", (100 * R[0], 100 * R[1]), scroll=(0, 3))),
    (call("scroll", pixels=2), (7.0, 8.0), Action("scroll", (7.0, 8.0), scroll=(0, -2))),
    (call("hscroll", coordinate=[100, 100], pixels=4), None, Action("scroll", (100 * R[0], 100 * R[1]), scroll=(4, 0))),
    (call("wait", time=2), None, Action("wait")),
    # its own endings
    (call("terminate", status="success"), None, Action("done")),
    (call("terminate", status="failure"), None, Action("fail", text="terminate(status='failure')")),
    (call("answer", text="3 series"), None, Action("answer", text="3 series")),
    # arguments as a JSON string (some servers' tool-call parsers)
    ('<tool_call>\n{"name": "computer_use", "arguments": "{\\"action\\": \\"wait\\"}"}\n</tool_call>', None,
     Action("wait")),
    # a thinking model's thoughts are not actions; a cut-off last call is still read
    ("<think>maybe " + call("wait") + "</think>\n" + call("terminate", status="success"), None, Action("done")),
    ('<tool_call>\n{"name": "computer_use", "arguments": {"action": "wait"}}', None, Action("wait")),
])
def test_qwen3_calls(text, cursor, want):
    got = actions(parse("qwen3-vl", text, cursor))
    assert len(got) == 1 and same(got[0], want), got


@pytest.mark.parametrize("text, cursor", [
    (call("triple_click", coordinate=[100, 100]), None),        # the cookbook's executor guesses a double click
    (call("middle_click", coordinate=[100, 100]), None),
    (call("left_click"), None),                                  # no coordinate, no pointer position yet
    (call("left_click_drag", coordinate=[100, 100]), None),
    (call("terminate", status="maybe"), None),
    ('<tool_call>\n{"name": "computer_use", "arguments": {"action": ["left_click"]}}\n</tool_call>', None),
    (call("type"), None),
    (call("scroll", coordinate=[1, 2]), None),
    ('<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [1, </tool_call>',
     None),
])
def test_qwen_refusals(text, cursor):
    (step,) = parse("qwen3-vl", text, cursor).steps
    assert step.action is None and step.problem


def test_qwen_several_calls_thread_the_pointer():
    text = call("mouse_move", coordinate=[100, 100]) + "\n" + call("left_click_drag", coordinate=[200, 300])
    p = (100 * R[0], 100 * R[1])
    assert actions(parse("qwen3-vl", text)) == [Action("hover", p), Action("drag", p, (200 * R[0], 300 * R[1]))]


# --- OpenAI computer use -------------------------------------------------------------------

def reply(*items, rid="resp_1"):
    return {"id": rid, "object": "response", "output": list(items)}


def computer_call(action, call_id="call_1", checks=()):
    return {"type": "computer_call", "id": "cu_1", "call_id": call_id, "action": action,
            "pending_safety_checks": list(checks), "status": "completed"}


def test_openai_guide_example():
    # The computer use guide's example response: a reasoning summary, then a click.
    r = reply({"type": "reasoning", "id": "rs_67cc", "summary": [
                   {"type": "summary_text", "text": "Clicking on the browser address bar."}]},
              computer_call({"type": "click", "button": "left", "x": 156, "y": 50}, "call_zw3"))
    reading = parse("openai-computer-use", r)
    assert actions(reading) == [Action("click", (156.0, 50.0))]
    assert reading.steps[0].call_id == "call_zw3"
    assert reading.extra["thought"] == "Clicking on the browser address bar."


@pytest.mark.parametrize("action, want", [
    ({"type": "click", "button": "right", "x": 10, "y": 20}, Action("right_click", (10.0, 20.0))),
    ({"type": "double_click", "x": 10, "y": 20}, Action("double_click", (10.0, 20.0))),
    ({"type": "drag", "path": [{"x": 10, "y": 20}, {"x": 15, "y": 25}, {"x": 30, "y": 40}]},
     Action("drag", (10.0, 20.0), (30.0, 40.0))),
    ({"type": "keypress", "keys": ["CTRL", "A"]}, Action("key", keys="ctrl+a")),
    ({"type": "keypress", "keys": ["ENTER"]}, Action("key", keys="enter")),
    ({"type": "keypress", "keys": ["ARROWDOWN"]}, Action("key", keys="down")),
    ({"type": "move", "x": 10, "y": 20}, Action("hover", (10.0, 20.0))),
    # pixels -> wheel notches of 100 pixels; a small scroll is still one notch
    ({"type": "scroll", "x": 10, "y": 20, "scroll_x": 0, "scroll_y": 300},
     Action("scroll", (10.0, 20.0), scroll=(0, 3))),
    ({"type": "scroll", "x": 10, "y": 20, "scroll_x": -40, "scroll_y": 0},
     Action("scroll", (10.0, 20.0), scroll=(-1, 0))),
    ({"type": "type", "text": "PHANTOM"}, Action("type", text="PHANTOM")),
    ({"type": "wait"}, Action("wait")),
    ({"type": "screenshot"}, Action("wait")),
])
def test_openai_actions(action, want):
    assert actions(parse("openai-computer-use", reply(computer_call(action)))) == [want]


def test_openai_endings_and_refusals():
    message = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done: 3 studies."}]}
    assert actions(parse("openai-computer-use", reply(message))) == [Action("answer", text="Done: 3 studies.")]
    empty = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": ""}]}
    assert actions(parse("openai-computer-use", reply(empty))) == [Action("done")]
    assert parse("openai-computer-use", reply()).steps == []              # nothing said: no action
    wheel = computer_call({"type": "click", "button": "wheel", "x": 1, "y": 2})
    (step,) = parse("openai-computer-use", reply(wheel)).steps
    assert step.action is None and "wheel" in step.problem
    (step,) = parse("openai-computer-use", reply(computer_call({"type": "zoom"}))).steps
    assert step.action is None and step.name == "zoom"
    (step,) = parse("openai-computer-use", reply(computer_call({"type": "keypress", "keys": "CTRL"}))).steps
    assert step.action is None and step.problem == "keypress without keys"
    # a message beside a computer_call is commentary: the call is the action
    both = parse("openai-computer-use", reply(message, computer_call({"type": "wait"})))
    assert actions(both) == [Action("wait")] and both.extra["message"] == "Done: 3 studies."


# --- JSON ------------------------------------------------------------------------------

def test_json_actions():
    text = 'Next: ```json\n{"type": "drag", "point": [10, 20], "end_point": [30, 40]}\n```'
    assert actions(parse("json", text)) == [Action("drag", (10.0, 20.0), (30.0, 40.0))]
    assert actions(parse("json", '{"type": "click", "x": 5, "y": 6}')) == [Action("click", (5.0, 6.0))]
    (step,) = parse("json", '{"type": "triple_click", "point": [1, 2]}').steps
    assert step.action is None and step.name == "triple_click" and "unknown action type" in step.problem
    assert parse("json", "I would click the button.").steps == []
    # an object wrapped in another is found; a type that is not a name is refused
    assert actions(parse("json", '{"thought": "t", "action": {"type": "wait"}}')) == [Action("wait")]
    (step,) = parse("json", '{"type": ["click"], "point": [1, 2]}').steps
    assert step.action is None and step.name == "unreadable"
    assert set(SAMPLES) == set(ACTION_TYPES)      # the prompt can show every action type


# --- round trips: writer -> parser ----------------------------------------------------------
P, Q = (1234.5, 456.7), (300.2, 900.9)
KINDS = {
    "click": Action("click", P), "double_click": Action("double_click", P), "right_click": Action("right_click", P),
    "hover": Action("hover", P), "drag": Action("drag", P, Q), "type": Action("type", text="it's PHANTOM\n"),
    "type_at": Action("type", P, text="abc"), "scroll": Action("scroll", P, scroll=(0, 5)),
    "scroll_up_left": Action("scroll", P, scroll=(-5, 0)), "scroll_3": Action("scroll", P, scroll=(0, 3)),
    "scroll_both": Action("scroll", P, scroll=(2, -1)),
    "key": Action("key", keys="ctrl+shift+t"), "key_fn": Action("key", keys="F5"), "wait": Action("wait"),
    "done": Action("done"), "fail": Action("fail", text="no such study"), "answer": Action("answer", text="3 series"),
}
CLICK_P = Action("click", P)
# What a format writes as several calls, or cannot carry whole.
EXPANDED = {
    ("ui-tars-1.5", "type_at"): [CLICK_P, Action("type", text="abc")],
    ("ui-tars-1.5", "fail"): [Action("fail", text="call_user()")],
    ("openai-computer-use", "type_at"): [CLICK_P, Action("type", text="abc")],
}
for q in ("qwen2.5-vl", "qwen3-vl"):
    EXPANDED |= {(q, "type_at"): [CLICK_P, Action("type", text="abc")],
                 (q, "drag"): [Action("hover", P), Action("drag", P, Q)],     # the tool drags from the cursor
                 (q, "fail"): [Action("fail", text="terminate(status='failure')")]}
EXPANDED[("qwen3-vl", "scroll_both")] = [Action("scroll", P, scroll=(0, -1)), Action("scroll", P, scroll=(2, 0))]
UNEXPRESSIBLE = {("ui-tars-1.5", "scroll_3"), ("ui-tars-1.5", "scroll_both"), ("openai-computer-use", "fail"),
                 ("qwen2.5-vl", "scroll_up_left"), ("qwen2.5-vl", "scroll_both"), ("qwen2.5-vl", "answer")}


@pytest.mark.parametrize("size", [HD, (1280, 800)])
@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_round_trip(name, kind, size):
    fmt = get_format(name)
    sizes = fmt.sizes(size)
    action = KINDS[kind]
    if (name, kind) in UNEXPRESSIBLE:
        with pytest.raises(Unexpressible):
            fmt.write(action, sizes)
        return
    native = fmt.write(action, sizes)
    reading = fmt.parse(reply(*native), sizes) if fmt.api == "responses" else fmt.parse(native, sizes, None)
    got, want = actions(reading), EXPANDED.get((name, kind), [action])
    tol = max(fmt.space.quantum(sizes.observation, sizes.sent)) + 1e-9
    assert len(got) == len(want) and all(same(g, w, tol) for g, w in zip(got, want)), (native, got)


def test_every_action_kind_is_covered():
    assert {a.type for a in KINDS.values()} == set(ACTION_TYPES)


# --- shared pieces -----------------------------------------------------------------------

def test_key_names():
    assert key_combo(["CTRL", "Shift", "ArrowLeft"]) == "ctrl+Shift+left"
    assert [env_key(k) for k in ("A", "f12", "Caps_Lock", "CAPSLOCK", "+", " ", "KP_0")] == \
        ["a", "F12", "Caps_Lock", "Caps_Lock", "plus", "space", "KP_0"]
    assert [notches(p) for p in (0, 40, 100, 149, 151, -300)] == [0, 1, 1, 1, 2, -3]


def test_prompts_are_the_published_ones():
    # Qwen2.5-VL's system text is the one the qwen2.5-vl grounding family sends
    q = get_format("qwen2.5-vl")
    sizes = q.sizes(HD)
    assert q.system(sizes) == prompts.qwen25_vl("x", sizes.sent, "data:,").messages[0]["content"]
    assert "The screen's resolution is 1932x1092." in q.system(sizes)
    q3 = get_format("qwen3-vl").system(sizes)
    assert "The screen's resolution is 1000x1000." in q3 and '"triple_click", "scroll", "hscroll"' in q3
    assert q3.startswith("You are a helpful assistant.\n\n# Tools\n\n")
    # UI-TARS' COMPUTER_USE: the escapes as the model reads them
    messages = get_format("ui-tars-1.5").messages("Delete the study.", History(), "data:,", sizes, ())
    text = messages[0]["content"][0]["text"]
    assert "type(content='xxx') # Use escape characters \\', \\\", and \\n in content part" in text
    assert text.endswith("## User Instruction\nDelete the study.\n") and "- Use English in `Thought` part." in text
