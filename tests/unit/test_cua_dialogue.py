"""The computer-use dialogues (clinigym/agents/cua): the history window and its two
layouts, the chat request, and the Responses API chain (first request, previous
response, one computer_call_output per call with the screenshot after it and the
acknowledged safety checks). Pure unit tests on the real objects, with literal replies."""
from __future__ import annotations

import pytest

from clinigym.agents.cua import get_format
from clinigym.agents.cua.base import Settings
from clinigym.agents.cua.history import History, Turn, all_texts, summarised
from clinigym.core.actions import Action

HD = (1920, 1080)
NOW = "data:image/png;base64,NOW"


def turns(n):
    return [Turn(f"data:image/png;base64,T{i}", f"answer {i}") for i in range(n)]


def layout(messages):
    """Each message as (role, [what it holds])."""
    def part(p):
        return p["image_url"]["url"].rsplit(",", 1)[1] if p["type"] == "image_url" else p["text"][:12]
    return [(m["role"], [part(p) for p in m["content"]] if isinstance(m["content"], list) else m["content"][:12])
            for m in messages]


def history(images, n):
    h = History(images)
    for t in turns(n):
        h.add(t)
    return h


def test_window():
    h = history(3, 5)
    older, recent = h.split()
    assert [t.answer for t in older] == ["answer 0", "answer 1", "answer 2"]
    assert [t.answer for t in recent] == ["answer 3", "answer 4"]      # 2 past screenshots + the current one
    assert history(1, 2).split() == (turns(2), [])                       # the current screenshot only
    assert history(5, 2).split() == ([], turns(2))
    h.reset()
    assert h.turns == [] and h.split() == ([], [])
    with pytest.raises(ValueError):
        History(0)


def test_all_texts_layout():
    # UI-TARS: every past answer as text, screenshots only within the window
    assert layout(all_texts(history(2, 3), "PROMPT", NOW)) == [
        ("user", ["PROMPT"]),
        ("assistant", "answer 0"), ("assistant", "answer 1"),
        ("user", ["T2"]), ("assistant", "answer 2"),
        ("user", ["NOW"])]
    assert layout(all_texts(History(3), "PROMPT", NOW)) == [("user", ["PROMPT"]), ("user", ["NOW"])]


def test_summarised_layout():
    messages = summarised(history(2, 3), "SYSTEM", "Delete the study.", NOW)
    assert layout(messages) == [
        ("system", "SYSTEM"),
        ("user", ["Please gener", "T2"]), ("assistant", "answer 2"),
        ("user", ["NOW"])]
    assert messages[1]["content"][0]["text"] == (
        "Please generate the next move according to the UI screenshot, instruction and previous actions.\n\n"
        "Instruction: Delete the study.\n\nPrevious actions:\nStep 1: answer 0\nStep 2: answer 1")
    first = summarised(History(3), "SYSTEM", "Delete the study.", NOW)
    assert layout(first) == [("system", "SYSTEM"), ("user", ["Please gener", "NOW"])]
    assert first[1]["content"][0]["text"].endswith("Previous actions:\nNone")


def test_chat_dialogue_keeps_every_answer():
    fmt = get_format("qwen3-vl")
    dialogue = fmt.dialogue(Settings(images=2, max_tokens=256))
    sizes = fmt.sizes(HD)
    body = dialogue.request("Delete the study.", NOW, sizes)
    assert body["temperature"] == 0.0 and body["max_tokens"] == 256 and body["messages"][0]["role"] == "system"
    reply = {"choices": [{"message": {"role": "assistant", "content": "<think>hm</think>no tool call"}}]}
    reading = dialogue.read(reply, NOW, sizes, None)
    assert reading.steps == [] and dialogue.history.turns == [Turn(NOW, "<think>hm</think>no tool call")]
    second = dialogue.request("Delete the study.", "data:image/png;base64,NEXT", sizes)
    assert layout(second["messages"])[1:] == [("user", ["Please gener", "NOW"]),
                                              ("assistant", "<think>hm</t"), ("user", ["NEXT"])]
    dialogue.reset()
    assert dialogue.history.turns == []


def test_json_prompt_lists_the_environment_actions():
    fmt = get_format("json")
    sizes = fmt.sizes(HD)
    system = fmt.system(sizes, ("click", "type", "done"))
    assert '- click(x, y): {"type": "click", "point": [812, 44]}' in system
    assert "1920x1080 pixels" in system and "right_click" not in system and "- done()" in system


# --- the Responses API chain ---------------------------------------------------------------
CHECK = {"id": "cu_sc_67cb", "code": "malicious_instructions",
         "message": "We've detected instructions that may cause your application to perform malicious or "
                    "unauthorized actions. Please acknowledge this warning if you'd like to proceed."}


def test_responses_chain():
    fmt = get_format("openai-computer-use")
    dialogue = fmt.dialogue(Settings())
    sizes = fmt.sizes(HD)
    assert dialogue.path == "responses"
    first = dialogue.request("Delete the study.", NOW, sizes)
    assert first == {
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Delete the study."},
                                               {"type": "input_image", "image_url": NOW}]}],
        "tools": [{"type": "computer_use_preview", "display_width": 1920, "display_height": 1080,
                   "environment": "linux"}],
        "truncation": "auto"}
    reply = {"id": "resp_1", "output": [
        {"type": "computer_call", "call_id": "call_a", "action": {"type": "click", "button": "left", "x": 5, "y": 6},
         "pending_safety_checks": [CHECK]},
        {"type": "computer_call", "call_id": "call_b", "action": {"type": "type", "text": "x"},
         "pending_safety_checks": []}]}
    reading = dialogue.read(reply, NOW, sizes, None)
    assert [s.action for s in reading.steps] == [Action("click", (5.0, 6.0)), Action("type", text="x")]
    assert reading.extra["safety_checks"] == {"call_a": [CHECK], "call_b": []}
    # the agent hands out the click, sees the screen after it, hands out the typing, sees the screen after that
    dialogue.handed(reading.steps[0])
    dialogue.observed("data:image/png;base64,AFTER_A")
    dialogue.handed(reading.steps[1])
    dialogue.observed("data:image/png;base64,AFTER_B")
    second = dialogue.request("Delete the study.", "data:image/png;base64,AFTER_B", sizes)
    assert second == {
        "previous_response_id": "resp_1",
        "input": [{"type": "computer_call_output", "call_id": "call_a", "acknowledged_safety_checks": [CHECK],
                   "output": {"type": "input_image", "image_url": "data:image/png;base64,AFTER_A"}},
                  {"type": "computer_call_output", "call_id": "call_b", "acknowledged_safety_checks": [],
                   "output": {"type": "input_image", "image_url": "data:image/png;base64,AFTER_B"}}],
        "tools": first["tools"], "truncation": "auto"}
    # a reply without calls whose episode goes on: the task and the screen again, same conversation
    dialogue.read({"id": "resp_2", "output": []}, NOW, sizes, None)
    third = dialogue.request("Delete the study.", NOW, sizes)
    assert third["previous_response_id"] == "resp_2" and third["input"] == first["input"]
    dialogue.reset()
    assert dialogue.request("Delete the study.", NOW, sizes) == first


def test_responses_actions_list_share_their_call():
    # the newer computer tool batches actions in one call: one output, after the last
    fmt = get_format("openai-computer-use")
    dialogue, sizes = fmt.dialogue(Settings()), fmt.sizes(HD)
    reply = {"id": "resp_1", "output": [{"type": "computer_call", "call_id": "call_a", "pending_safety_checks": [],
                                         "actions": [{"type": "move", "x": 1, "y": 2}, {"type": "wait"}]}]}
    steps = dialogue.read(reply, NOW, sizes, None).steps
    assert [s.call_id for s in steps] == ["call_a", "call_a"]
    for i, step in enumerate(steps):
        dialogue.handed(step)
        dialogue.observed(f"data:image/png;base64,S{i}")
    outputs = dialogue.request("t", NOW, sizes)["input"]
    assert [(o["call_id"], o["output"]["image_url"]) for o in outputs] == [("call_a", "data:image/png;base64,S1")]
