"""What the model-server agents send and read in each observation mode (issue #37): the
tree text and the mark list after the family's prompt (clinigym/agents/families/observed.py),
no image without a screenshot, a mark named instead of coordinates. The http agent over
real HTTP on loopback, with exact request bodies and parsed answers; the computer-use
agent's side is tests/unit/test_cua_observations.py."""
from __future__ import annotations

import numpy as np
import pytest

from clinigym.agents.families import FAMILIES, get_family
from clinigym.agents.families.observed import MarkError, Marks, Observed, cut, named_marks
from clinigym.agents.families.prompts import image_part, text_part
from clinigym.agents.http import HttpAgent, data_url
from clinigym.agents.registry import AGENTS, check_agent
from clinigym.core.context import AgentContext
from clinigym.core.errors import AgentError
from clinigym.core.geometry import Box
from clinigym.core.marks import Mark, marks_to_json
from clinigym.testing.openai_server import LoopbackServer, chat_reply, responses_reply

HD = (1920, 1080)
MARKS = [Mark(1, "link", "Lookup", Box(5, 4, 99, 35)), Mark(2, "link", "Anonymize", Box(16, 400, 566, 442)),
         Mark(3, "textbox", "Filter items...", Box(618, 59, 1824, 95))]
TREE = ('[1] RootWebArea "CLINIGYM » Patient" (0,0,1920,1080) focusable,focused\n'
        '  [2] link "Lookup" (5,4,99,35) focusable\n'
        '  [3] link "Anonymize" (16,400,566,442) focusable\n'
        '  [4] textbox "Filter items..." (618,59,1824,95) editable,focusable')
TREE_LEAD = ("The program's accessibility tree of this screen follows, one element per line, indented by depth: "
             "[n] role \"name\" (x1,y1,x2,y2) states, boxes in pixels of the 1920x1080 screen.\n")
MARKS_LEAD = ("The screenshot shows numbered marks on the program's interactive elements, listed below as "
              "[mark] role \"name\" (x1,y1,x2,y2), boxes in pixels of the 1920x1080 screen.")
MARK_LIST = ('[1] link "Lookup" (5,4,99,35)\n[2] link "Anonymize" (16,400,566,442)\n'
             '[3] textbox "Filter items..." (618,59,1824,95)')
INSTRUCTION = "Click on the Anonymize button."
SCREEN = np.full((1080, 1920, 3), 200, np.uint8)


def observation(mode: str) -> dict:
    """An observation of each mode, as clinigym.envs.observations gives them."""
    fields = {"screenshot": {"screenshot": SCREEN}, "a11y": {"a11y": TREE, "a11y_json": "{}"},
              "screenshot+a11y": {"screenshot": SCREEN, "a11y": TREE, "a11y_json": "{}"},
              "som": {"screenshot": SCREEN, "marks": marks_to_json(MARKS)}}[mode]
    return {**fields, "instruction": INSTRUCTION, "step": 0}


class Fixed(LoopbackServer):
    """Answers each request with the next of the given answers (a text, or Responses output items)."""
    __test__ = False

    def __init__(self, *answers):
        self.answers = list(answers)
        super().__init__()

    def reply(self, api, body):
        answer = self.answers.pop(0)
        return responses_reply(answer) if api == "responses" else chat_reply(answer, body.get("model"))


def ask(family: str, mode: str, answer, **options):
    """(the action, the request body without the model) of one step of the http agent."""
    with Fixed(answer) as server:
        agent = HttpAgent(AgentContext(HD, observation=mode), family=family, base_url=server.url, **options)
        action = agent.act(observation(mode), {})
    body = dict(server.requests[0])
    del body["model"]
    return action, body


# --- the text and the marks ---------------------------------------------------------------

def test_cut_keeps_whole_lines_and_says_how_many_are_left_out():
    assert cut(TREE, len(TREE)) == TREE
    assert cut(TREE, 120) == (
        '[1] RootWebArea "CLINIGYM » Patient" (0,0,1920,1080) focusable,focused\n'
        '  [2] link "Lookup" (5,4,99,35) focusable\n'
        "[cut here: 2 of 4 lines left out; a request carries at most 120 characters of them]")
    # a first line longer than the limit: its start
    assert cut(TREE, 11) == ("[1] RootWeb\n"
                             "[cut here: 4 of 4 lines left out; a request carries at most 11 characters of them]")


def test_the_text_of_each_mode():
    assert Observed.of(observation("screenshot")).text("click(mark=12)") is None
    assert Observed.of(observation("a11y"), HD).text("click(mark=12)") == TREE_LEAD + TREE
    assert Observed.of(observation("screenshot+a11y")).text(None) == TREE_LEAD + TREE
    som = Observed.of(observation("som"))
    assert som.text("click(mark=12)") == (
        MARKS_LEAD + " To act on a marked element, you may name its mark instead of coordinates: click(mark=12)."
        "\n" + MARK_LIST)
    assert som.text(None) == MARKS_LEAD + "\n" + MARK_LIST        # a family that cannot name one is not told
    assert som.size == HD and som.marks is not None and list(som.marks.by_number) == [1, 2, 3]


def test_without_a_screenshot_the_size_is_the_context_s():
    assert Observed.of(observation("a11y"), (1280, 800)).size == (1280, 800)
    assert Observed.of(observation("som"), (1280, 800)).size == HD     # the screenshot's own
    with pytest.raises(AgentError, match="without a screenshot: the agent needs its context's observation_size"):
        Observed.of(observation("a11y"))


@pytest.mark.parametrize("text, numbers", [
    ("Action: click(mark=2)", [2]), ("click(mark='3')", [3]), ('{"mark": 1}', [1]),
    ('[{"mark": 2, "label": "a"}, {"mark": 3}]', [2, 3]), ("<think>mark=1?</think>mark = 3", [1, 3]),
    ("pyautogui.click(x=0.1, y=0.2)", []), ("the bookmark=2 link", []), ("drag(end_mark=3)", []),
])
def test_the_mark_syntax(text, numbers):
    found, problems = named_marks(text, Marks.from_json(marks_to_json(MARKS), HD))
    assert [m.number for m in found] == numbers and problems == []


def test_a_number_without_a_mark_is_said_so():
    marks = Marks.from_json(marks_to_json(MARKS), HD)
    assert marks.named(2) is marks.by_number[2] and marks.named("3") is marks.by_number[3]
    assert named_marks("click(mark=99) or mark=-1 or mark=2.5 or mark=1", marks) == (
        [marks.by_number[1]], ["no mark 99 on this screen (its marks are 1 to 3)",
                               "no mark -1 on this screen (its marks are 1 to 3)",
                               "mark '2.5' is not a mark number"])
    for value, message in [(True, "mark True is not a mark number"), ([1], r"mark \[1\] is not a mark number")]:
        with pytest.raises(MarkError, match=message):
            marks.named(value)
    with pytest.raises(MarkError, match=r"no mark 1 on this screen \(it has no marks\)"):
        Marks({}, HD).named(1)
    off = Marks.from_json(marks_to_json([Mark(1, "link", "Off", Box(1900, 10, 2000, 20))]), HD)
    with pytest.raises(MarkError, match=r"mark 1's centre \(1950, 15\) is outside the screen"):
        off.named(1)


# --- the http agent -----------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_screenshot_mode_sends_the_published_prompt(name):
    family = FAMILIES[name]
    sent = family.resize_for(HD)
    assert family.build_messages(INSTRUCTION, HD, "data:image/png;base64,X") == \
        family.prompt(INSTRUCTION, sent, "data:image/png;base64,X")


def test_the_tree_follows_the_prompt_with_the_screenshot():
    family = get_family("ui-tars-1.5")
    action, body = ask("ui-tars-1.5", "screenshot+a11y", "Action: click(start_box='(100,200)')")
    grounding = family.prompt(INSTRUCTION, family.resize_for(HD), "").messages[0]["content"][0]
    assert body["messages"] == [{"role": "user", "content": [
        grounding, image_part(data_url(SCREEN, family.resize_for(HD))), text_part(TREE_LEAD + TREE)]}]
    assert action.point == pytest.approx((100 * 1920 / 1932, 200 * 1080 / 1092))
    assert "marks" not in action.meta and "problem" not in action.meta


def test_the_tree_alone_sends_no_image():
    action, body = ask("gpt-4o", "a11y", "(291,421)")
    assert body["messages"] == [{"role": "user", "content": [
        text_part("Click on the Anonymize button.\nImage resolution: width=1920, height=1080.\n"
                  "Click the correct UI element.\nReturn ONLY integer pixel coordinates as (x,y) where x is in "
                  "[0,1920] and y is in [0,1080]. No explanation."),
        text_part(TREE_LEAD + TREE)]}]
    assert action.type == "click" and action.point == (291.0, 421.0) and action.meta["sent_size"] == [1920, 1080]
    with Fixed("(1,2)") as server, pytest.raises(AgentError, match="needs its context's observation_size"):
        HttpAgent(family="gpt-4o", base_url=server.url).act(observation("a11y"), {})


def test_a_cut_tree():
    action, body = ask("gpt-4o", "a11y", "(52,19)", a11y_chars=120)
    assert body["messages"][0]["content"][-1] == text_part(
        TREE_LEAD + '[1] RootWebArea "CLINIGYM » Patient" (0,0,1920,1080) focusable,focused\n'
                    '  [2] link "Lookup" (5,4,99,35) focusable\n'
                    "[cut here: 2 of 4 lines left out; a request carries at most 120 characters of them]")
    assert action.point == (52.0, 19.0)


def test_a_mark_answer_is_the_mark_s_centre():
    hint = ' To act on a marked element, you may name its mark instead of coordinates: [{"mark": 12, "label": "..."}].'
    action, body = ask("qwen3-vl", "som", '```json\n[{"mark": 2, "label": "Anonymize"}, {"mark": 3}]\n```')
    assert body["messages"] == [{"role": "user", "content": [
        image_part(data_url(SCREEN, HD)),
        text_part('Locate the UI element to interact with for the instruction "Click on the Anonymize button." '
                  'in this screenshot, and output its point coordinates in JSON format: '
                  '[{"point_2d": [x, y], "label": "..."}].'),
        text_part(MARKS_LEAD + hint + "\n" + MARK_LIST)]}]
    assert action.type == "click" and action.point == (291.0, 421.0)
    assert action.meta["points"] == [[291.0, 421.0], [1221.0, 77.0]]
    assert action.meta["marks"] == [MARKS[1].as_dict(), MARKS[2].as_dict()] and "problem" not in action.meta


@pytest.mark.parametrize("family, answer", [
    ("ui-tars-1.5", "Action: click(mark=2)"), ("ui-tars", "click(mark=2)"), ("os-atlas-base", "mark=2"),
    ("qwen2.5-vl", '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "mark": 2}}\n'
                   "</tool_call>"),
    ("aguvis", "pyautogui.click(mark=2)"), ("cogagent", "Grounded Operation:CLICK(mark=2)"), ("gpt-5", "mark=2"),
])
def test_each_family_names_a_mark_its_own_way(family, answer):
    action, body = ask(family, "som", answer)
    assert f"you may name its mark instead of coordinates: {FAMILIES[family].mark_hint}." in str(body)
    assert action.point == (291.0, 421.0) and action.meta["marks"] == [MARKS[1].as_dict()]


def test_an_unknown_mark_is_no_prediction_with_the_reason():
    action, _ = ask("ui-tars-1.5", "som", "Action: click(mark=99)")
    assert action.type == "click" and action.point is None and action.meta["points"] == [] and \
        action.meta["marks"] == []
    assert action.meta["problem"] == "no mark 99 on this screen (its marks are 1 to 3)"
    # a mark named, and coordinates too: the mark is what the answer means, not a fallback
    action, _ = ask("ui-tars-1.5", "som", "Action: click(mark=7, start_box='(100,200)')")
    assert action.point is None and action.meta["problem"].startswith("no mark 7 on this screen")


def test_openai_computer_use_is_not_told_of_mark_answers():
    item = {"type": "computer_call", "call_id": "c", "action": {"type": "click", "button": "left", "x": 52, "y": 19},
            "pending_safety_checks": [], "mark": 2}
    action, body = ask("openai-computer-use", "som", [item])
    assert body["input"][0]["content"][-1] == {"type": "input_text", "text": MARKS_LEAD + "\n" + MARK_LIST}
    assert action.point == (52.0, 19.0) and "marks" not in action.meta    # its x and y, its only way


def test_the_model_server_agents_read_every_mode():
    for mode in ("screenshot", "a11y", "screenshot+a11y", "som"):
        assert check_agent("http", {}, mode) is AGENTS["http"] and check_agent("cua", {}, mode) is AGENTS["cua"]
    with pytest.raises(AgentError, match="the ocr agent reads the screenshot"):
        check_agent("ocr", {}, "a11y")
