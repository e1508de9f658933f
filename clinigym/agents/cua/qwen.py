"""Qwen2.5-VL and Qwen3-VL as computer-use agents: the `computer_use` function declared in
qwen-agent's Nous function-calling system prompt, answered with
`<tool_call>{"name": "computer_use", "arguments": {"action": ...}}</tool_call>`.

The two differ in the tool and its coordinates:

- Qwen2.5-VL: absolute pixels of the smart-resized screenshot (factor 28, qwen-vl-utils'
  budget), the tool stating that size as the screen's resolution; 11 actions (key, type,
  mouse_move, left_click, left_click_drag, right_click, middle_click, double_click, scroll,
  wait, terminate). Tool as in `clinigym.agents.families.prompts` (QwenLM/Qwen2.5-VL
  cookbooks/utils/agent_function_call.py).
- Qwen3-VL: relative coordinates on [0, 1000) of each side, the tool declared at
  1000x1000 and the screenshot sent as is (QwenLM/Qwen3-VL cookbooks/computer_use.ipynb:
  `ComputerUse(cfg={"display_width_px": 1000, "display_height_px": 1000})`, then
  `coordinate / 1000 * width`); 14 actions, adding triple_click, hscroll and answer
  (cookbooks/utils/agent_function_call.py).

Mapping: left_click / right_click / double_click -> the same (at the coordinate, else at
the pointer: the tool clicks where the cursor is), mouse_move -> hover, left_click_drag ->
drag from the pointer to the coordinate, type -> type, key(keys) -> key('a+b'),
scroll(pixels) -> -pixels wheel notches down (positive scrolls up; the executors run
pyautogui.scroll(pixels), wheel clicks on X11), hscroll(pixels) -> pixels notches right,
wait -> wait, terminate(success) -> done(), terminate(failure) -> fail, answer(text) ->
answer(text). triple_click and middle_click have no equivalent and are refused (the
cookbook's own executor turns a triple click into a double click: a guess, not made here).

In the som mode a call may name a mark instead: ``"mark": N`` in place of "coordinate"
(``{"action": "left_click", "mark": 12}``); a number with no mark refuses the call.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clinigym.agents.cua.base import Reading, Sizes, Step, Unexpressible, combo_keys, key_combo, last_pointer, to_step
from clinigym.agents.cua.chat import ChatFormat
from clinigym.agents.cua.history import History, summarised
from clinigym.agents.families import get_family
from clinigym.agents.families.coords import PIXELS, REL_1000, Point, Space
from clinigym.agents.families.observed import MarkError, Marks, mark_at, mark_centre
from clinigym.agents.families.prompts import _computer_use_tool as qwen25_tool
from clinigym.agents.families.resize import AsIs, SmartResize
from clinigym.agents.families.thinking import strip_think
from clinigym.core.actions import Action

# qwen-agent qwen_agent/llm/fncall_prompts/nous_fncall_prompt.py FN_CALL_TEMPLATE, appended to
# the cookbooks' system message "You are a helpful assistant." (preprocess_fncall_messages).
NOUS_SYSTEM = (
    "You are a helpful assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user "
    "query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    "{tool_descs}\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>')
FUNCTION = "computer_use"


def qwen3_tool(width: int, height: int) -> dict[str, Any]:
    """Qwen3-VL's computer_use function, as qwen-agent's BaseTool.function lists it
    (QwenLM/Qwen3-VL cookbooks/utils/agent_function_call.py ComputerUse)."""
    description = (
        "Use a mouse and keyboard to interact with a computer, and take screenshots.\n"
        "* This is an interface to a desktop GUI. You do not have access to a terminal or applications menu. "
        "You must click on desktop icons to start applications.\n"
        "* Some applications may take time to start or process actions, so you may need to wait and take "
        "successive screenshots to see the results of your actions. E.g. if you click on Firefox and a window "
        "doesn't open, try wait and taking another screenshot.\n"
        f"* The screen's resolution is {width}x{height}.\n"
        "* Whenever you intend to move the cursor to click on an element like an icon, you should consult a "
        "screenshot to determine the coordinates of the element before moving the cursor.\n"
        "* If you tried clicking on a program or link but it failed to load, even after waiting, try adjusting "
        "your cursor position so that the tip of the cursor visually falls on the element that you want to "
        "click.\n"
        "* Make sure to click any buttons, links, icons, etc with the cursor tip in the center of the element. "
        "Don't click boxes on their edges.")
    actions = (
        "The action to perform. The available actions are:\n"
        "* `key`: Performs key down presses on the arguments passed in order, then performs key releases in "
        "reverse order.\n"
        "* `type`: Type a string of text on the keyboard.\n"
        "* `mouse_move`: Move the cursor to a specified (x, y) pixel coordinate on the screen.\n"
        "* `left_click`: Click the left mouse button at a specified (x, y) pixel coordinate on the screen.\n"
        "* `left_click_drag`: Click and drag the cursor to a specified (x, y) pixel coordinate on the screen.\n"
        "* `right_click`: Click the right mouse button at a specified (x, y) pixel coordinate on the screen.\n"
        "* `middle_click`: Click the middle mouse button at a specified (x, y) pixel coordinate on the screen.\n"
        "* `double_click`: Double-click the left mouse button at a specified (x, y) pixel coordinate on the "
        "screen.\n"
        "* `triple_click`: Triple-click the left mouse button at a specified (x, y) pixel coordinate on the "
        "screen (simulated as double-click since it's the closest action).\n"
        "* `scroll`: Performs a scroll of the mouse scroll wheel.\n"
        "* `hscroll`: Performs a horizontal scroll (mapped to regular scroll).\n"
        "* `wait`: Wait specified seconds for the change to happen.\n"
        "* `terminate`: Terminate the current task and report its completion status.\n"
        "* `answer`: Answer a question.")
    names = ["key", "type", "mouse_move", "left_click", "left_click_drag", "right_click", "middle_click",
             "double_click", "triple_click", "scroll", "hscroll", "wait", "terminate", "answer"]
    return {"type": "function", "function": {
        "name_for_human": FUNCTION, "name": FUNCTION, "description": description,
        "parameters": {"properties": {
            "action": {"description": actions, "enum": names, "type": "string"},
            "keys": {"description": "Required only by `action=key`.", "type": "array"},
            "text": {"description": "Required only by `action=type` and `action=answer`.", "type": "string"},
            "coordinate": {"description": "(x, y): The x (pixels from the left edge) and y (pixels from the top "
                                          "edge) coordinates to move the mouse to.", "type": "array"},
            "pixels": {"description": "The amount of scrolling to perform. Positive values scroll up, negative "
                                      "values scroll down. Required only by `action=scroll` and `action=hscroll`.",
                       "type": "number"},
            "time": {"description": "The seconds to wait. Required only by `action=wait`.", "type": "number"},
            "status": {"description": "The status of the task. Required only by `action=terminate`.",
                       "type": "string", "enum": ["success", "failure"]}},
            "required": ["action"], "type": "object"},
        "args_format": "Format the arguments as a JSON object."}}


@dataclass(frozen=True)
class _Args:
    args: dict[str, Any]
    point: Point | None          # the coordinate, in observation pixels
    cursor: Point | None

    def at(self, kind: str) -> Action | str:
        at = self.point or self.cursor
        return Action(kind, at) if at else f"{kind} without a coordinate before any pointer action"


def _text(kind: str) -> Callable[[_Args], Action | str]:
    return lambda a: Action(kind, text=a.args["text"]) if isinstance(a.args.get("text"), str) and a.args["text"] \
        else f"{kind} without text"


def _keys(a: _Args) -> Action | str:
    keys = a.args.get("keys")
    names = keys.split("+") if isinstance(keys, str) else keys if isinstance(keys, list) else []
    return Action("key", keys=key_combo(str(k) for k in names)) if names else "key without keys"


def _scroll(vertical: bool) -> Callable[[_Args], Action | str]:
    def scroll(a: _Args) -> Action | str:
        pixels = a.args.get("pixels")
        if not isinstance(pixels, (int, float)) or isinstance(pixels, bool):
            return "scroll without a number of pixels"
        at = a.point or a.cursor
        if at is None:
            return "scroll without a coordinate before any pointer action"
        n = round(pixels)
        return Action("scroll", at, scroll=(0, -n) if vertical else (n, 0))   # positive pixels scroll up
    return scroll


def _drag(a: _Args) -> Action | str:
    if a.point is None or a.cursor is None:
        return "left_click_drag needs a coordinate and a pointer position to start from"
    return Action("drag", a.cursor, a.point)


def _terminate(a: _Args) -> Action | str:
    status = a.args.get("status")
    ends = {"success": Action("done"), "failure": Action("fail", text="terminate(status='failure')")}
    return ends.get(status, f"terminate with status {status!r}")


MAPPING: dict[str, Callable[[_Args], Action | str]] = {
    "left_click": lambda a: a.at("click"), "right_click": lambda a: a.at("right_click"),
    "double_click": lambda a: a.at("double_click"),
    "mouse_move": lambda a: Action("hover", a.point) if a.point else "mouse_move without a coordinate",
    "left_click_drag": _drag, "type": _text("type"), "key": _keys, "scroll": _scroll(True), "hscroll": _scroll(False),
    "wait": lambda a: Action("wait"), "terminate": _terminate, "answer": _text("answer"),
}
_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.S)


class Qwen(ChatFormat):
    mark_hint = '"mark": N in place of "coordinate", e.g. {"action": "left_click", "mark": 12}'

    def __init__(self, name: str, description: str, coords: str, sources: tuple[str, ...], space: Space,
                 resize: SmartResize | AsIs, tool: Callable[[Sizes], dict[str, Any]]):
        self.name, self.description, self.coords, self.sources = name, description, coords, sources
        self.space, self.resize, self.tool = space, resize, tool

    def system(self, sizes: Sizes) -> str:
        return NOUS_SYSTEM.format(tool_descs=json.dumps(self.tool(sizes), ensure_ascii=False))

    def messages(self, task: str, history: History, image_url: str | None, sizes: Sizes,
                 actions: tuple[str, ...], text: str | None = None) -> list[dict]:
        return summarised(history, self.system(sizes), task, image_url, text)

    def _step(self, native: str, body: str, sizes: Sizes, cursor: Point | None, marks: Marks | None) -> Step:
        try:
            call = json.loads(body)
            args = call["arguments"]
            args = json.loads(args) if isinstance(args, str) else args
            name, action = call["name"], args["action"]
            if not isinstance(action, str):
                raise TypeError(action)
        except (ValueError, KeyError, TypeError):
            return Step(native, "unreadable", None, "not a JSON function call")
        if name != FUNCTION:
            return Step(native, str(name), None, f"{name} is not the {FUNCTION} function")
        try:
            mark = mark_at(marks, args.get("mark"))
        except MarkError as exc:
            return Step(native, action, None, str(exc))
        coordinate = args.get("coordinate")
        point = mark_centre(mark) if mark else None
        if (point is None and isinstance(coordinate, list) and len(coordinate) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in coordinate)):
            point = self.to_obs((float(coordinate[0]), float(coordinate[1])), sizes)
        mapper = MAPPING.get(action)
        return to_step(native, action, mapper(_Args(args, point, cursor)) if mapper else
                       f"{action} has no equivalent action", marks=(mark,) if mark else ())

    def parse(self, text: str, sizes: Sizes, cursor: Point | None, marks: Marks | None = None) -> Reading:
        steps = []
        for m in _CALL.finditer(strip_think(text)):
            steps.append(self._step(m[0].strip(), m[1], sizes, cursor, marks))
            cursor = last_pointer(steps[-1:], cursor)
        return Reading(text, steps)

    # -- the inverse, for test servers -----------------------------------------------------
    def call(self, action: str, sizes: Sizes, **args: Any) -> str:
        enum = self.tool(sizes)["function"]["parameters"]["properties"]["action"]["enum"]
        if action not in enum:
            raise Unexpressible(f"{self.name}'s computer_use has no {action}")
        body = {"name": FUNCTION, "arguments": {"action": action, **args}}
        return f"<tool_call>\n{json.dumps(body, ensure_ascii=False)}\n</tool_call>"

    def coordinate(self, point: Point | None, sizes: Sizes) -> list[int]:
        if point is None:
            raise Unexpressible("this computer_use call needs a coordinate")
        x, y = self.space.quantise(point, sizes.observation, sizes.sent)
        return [int(x), int(y)]

    def write(self, action: Action, sizes: Sizes) -> str:
        if action.type not in WRITERS:
            raise Unexpressible(f"{self.name} has no call for {action.type}")
        return "\n".join(WRITERS[action.type](self, action, sizes))


Writer = Callable[[Qwen, Action, Sizes], list[str]]


def _w_at(call: str) -> Writer:
    return lambda f, a, s: [f.call(call, s, coordinate=f.coordinate(a.point, s))]


def _w_scroll(f: Qwen, a: Action, s: Sizes) -> list[str]:
    dx, dy = a.scroll
    at = f.coordinate(a.point, s)
    calls = [f.call("scroll", s, coordinate=at, pixels=-dy)] if dy or not dx else []
    return calls + ([f.call("hscroll", s, coordinate=at, pixels=dx)] if dx else [])


WRITERS: dict[str, Writer] = {
    "click": _w_at("left_click"), "double_click": _w_at("double_click"), "right_click": _w_at("right_click"),
    "hover": _w_at("mouse_move"),
    # the tool drags from where the cursor is: move there first
    "drag": lambda f, a, s: _w_at("mouse_move")(f, a, s) + [
        f.call("left_click_drag", s, coordinate=f.coordinate(a.end_point, s))],
    "type": lambda f, a, s: (_w_at("left_click")(f, a, s) if a.point else []) + [f.call("type", s, text=a.text)],
    "scroll": _w_scroll,
    "key": lambda f, a, s: [f.call("key", s, keys=combo_keys(a.keys or ""))],
    "wait": lambda f, a, s: [f.call("wait", s, time=1)],
    "done": lambda f, a, s: [f.call("terminate", s, status="success")],
    "fail": lambda f, a, s: [f.call("terminate", s, status="failure")],
    "answer": lambda f, a, s: [f.call("answer", s, text=a.text)],
}


QWEN25 = Qwen(
    "qwen2.5-vl", "Qwen2.5-VL computer use: the computer_use function (11 actions), Nous tool calls",
    "absolute pixels of the smart-resized screenshot (factor 28, 4..16384 x 28x28 pixels), stated as the "
    "screen's resolution",
    ("QwenLM/Qwen2.5-VL cookbooks/computer_use.ipynb, cookbooks/utils/agent_function_call.py (ComputerUse)",
     "QwenLM/Qwen-Agent qwen_agent/llm/fncall_prompts/nous_fncall_prompt.py (FN_CALL_TEMPLATE)",
     "xlang-ai/OSWorld Qwen agents (turn layout, 'Previous actions')"),
    PIXELS, get_family("qwen2.5-vl").resize, lambda s: qwen25_tool(*s.sent))
QWEN3 = Qwen(
    "qwen3-vl", "Qwen3-VL computer use: the computer_use function (14 actions) at 1000x1000, Nous tool calls",
    "relative [0,1000) of each side (the tool's screen is 1000x1000); the screenshot is sent as is",
    ("QwenLM/Qwen3-VL cookbooks/computer_use.ipynb (display 1000x1000, coordinate / 1000 * size)",
     "QwenLM/Qwen3-VL cookbooks/utils/agent_function_call.py (ComputerUse: 14 actions)",
     "QwenLM/Qwen-Agent qwen_agent/llm/fncall_prompts/nous_fncall_prompt.py (FN_CALL_TEMPLATE)",
     "xlang-ai/OSWorld Qwen3-VL agent (turn layout, 'Previous actions')"),
    REL_1000, AsIs(), lambda s: qwen3_tool(1000, 1000))
