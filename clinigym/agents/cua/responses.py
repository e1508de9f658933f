"""OpenAI computer use: the Responses API loop with the `computer_use_preview` tool.

The first request sends the task and the screenshot with the tool (display = the
observation's size, environment "linux", truncation "auto"; as the `openai-computer-use`
family builds it). The reply's `computer_call` items carry an `action`, a `call_id` and
`pending_safety_checks`; every following request names the previous response
(`previous_response_id`) and sends one `computer_call_output` per call: the screenshot
after that call's action as an `input_image`, with the call's safety checks acknowledged
(there is no person in this loop to ask; they are recorded in the step's meta). The
server keeps the conversation, so no history is kept here.

Mapping: click (button left) -> click, click (button right) -> right_click (wheel, back,
forward have no equivalent), double_click -> double_click, drag(path) -> drag from its
first to its last point (the display drags straight), keypress(keys) -> key('a+b'),
move -> hover, scroll(scroll_x, scroll_y pixels) -> wheel notches at 100 pixels a notch
(`base.NOTCH_PIXELS`), type -> type, wait and screenshot -> wait (no input; the next
screenshot follows). A reply with no computer_call but a message ends the episode: its
text is the model's answer (answer(text)), an empty message is done(). A reply with
neither is no action.

What else the observation shows (the tree text, the mark list: `families.observed`)
follows the task in the first request and is a user message after the call outputs in
the next ones. The tool's actions hold x and y only, so no call names a mark; and as
every call output is a screenshot, this format needs a mode with one.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from clinigym.agents.cua.base import (
    NOTCH_PIXELS,
    Reading,
    ReplyError,
    Settings,
    Sizes,
    Step,
    Unexpressible,
    combo_keys,
    key_combo,
    notches,
    to_step,
)
from clinigym.agents.families.coords import PIXELS, Point, Size
from clinigym.agents.families.observed import Marks, shown
from clinigym.agents.families.prompts import openai_computer_use
from clinigym.agents.families.resize import AsIs
from clinigym.agents.http import responses_input
from clinigym.core.actions import Action

Mapper = Callable[[dict[str, Any], Sizes], Action | str]


def _xy(act: dict[str, Any], sizes: Sizes) -> Point | None:
    x, y = act.get("x"), act.get("y")
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in (x, y)):
        return None
    return PIXELS.to_observation((float(x), float(y)), sizes.observation, sizes.sent)


def _at(kind: str) -> Mapper:
    def at(act: dict[str, Any], sizes: Sizes) -> Action | str:
        p = _xy(act, sizes)
        return Action(kind, p) if p else f"{act.get('type')} without x, y"
    return at


def _click(act: dict[str, Any], sizes: Sizes) -> Action | str:
    kinds = {"left": "click", "right": "right_click"}
    button = act.get("button", "left")
    return _at(kinds[button])(act, sizes) if button in kinds else f"a {button} click has no equivalent action"


def _drag(act: dict[str, Any], sizes: Sizes) -> Action | str:
    path = [_xy(p, sizes) if isinstance(p, dict) else None for p in act.get("path") or []]
    if len(path) < 2 or any(p is None for p in path):
        return "drag needs a path of at least two points"
    return Action("drag", path[0], path[-1])


def _scroll(act: dict[str, Any], sizes: Sizes) -> Action | str:
    p = _xy(act, sizes)
    dx, dy = act.get("scroll_x", 0), act.get("scroll_y", 0)
    if p is None or not all(isinstance(v, (int, float)) for v in (dx, dy)):
        return "scroll needs x, y, scroll_x and scroll_y"
    return Action("scroll", p, scroll=(notches(dx), notches(dy)))


MAPPING: dict[str, Mapper] = {
    "click": _click, "double_click": _at("double_click"), "drag": _drag, "move": _at("hover"),
    "scroll": _scroll,
    "keypress": lambda a, s: (Action("key", keys=key_combo(str(k) for k in a["keys"]))
                              if isinstance(a.get("keys"), list) and a["keys"] else "keypress without keys"),
    "type": lambda a, s: Action("type", text=a["text"]) if isinstance(a.get("text"), str) and a["text"] else
    "type without text",
    "wait": lambda a, s: Action("wait"), "screenshot": lambda a, s: Action("wait"),
}


class OpenAIComputerUse:
    api = "responses"
    name = "openai-computer-use"
    description = "OpenAI computer use: Responses API, computer_use_preview tool, computer_call items"
    coords = "pixels of the display declared in the tool (the observation's size, sent as is)"
    sources = ("OpenAI computer use guide (platform.openai.com/docs/guides/tools-computer-use): the loop, "
               "computer_call_output with input_image, acknowledged_safety_checks, truncation auto",
               "OpenAI API reference ResponseComputerToolCall: click button/x/y, double_click, drag path, keypress "
               "keys, move, scroll scroll_x/scroll_y, type, wait, screenshot",
               "openai/openai-cua-sample-app (the loop over output items)")
    space = PIXELS
    resize = AsIs()
    mark_hint = None              # its calls hold x and y only

    def sizes(self, observation: Size) -> Sizes:
        return Sizes(observation, self.resize.size(observation))

    def dialogue(self, settings: Settings) -> ResponsesDialogue:
        return ResponsesDialogue(self)

    def _step(self, act: Any, call_id: str | None, sizes: Sizes) -> Step:
        native = json.dumps(act)
        name = str(act.get("type")) if isinstance(act, dict) else "unreadable"
        mapper = MAPPING.get(name)
        return to_step(native, name, mapper(act, sizes) if mapper else f"{name} has no equivalent action", call_id)

    def parse(self, reply: dict[str, Any], sizes: Sizes) -> Reading:
        output = reply.get("output")
        if not isinstance(output, list) or not all(isinstance(item, dict) for item in output):
            raise ReplyError(f"not a response: {json.dumps(reply)[:200]}")
        steps, texts, thoughts, checks = [], [], [], {}
        for item in output:
            kind = item.get("type")
            if kind == "computer_call":
                call_id = item.get("call_id")
                checks[call_id] = item.get("pending_safety_checks") or []
                # the legacy single action, or the newer list of actions
                acts = item["actions"] if isinstance(item.get("actions"), list) else [item.get("action")]
                steps += [self._step(a, call_id, sizes) for a in acts]
            elif kind == "message":
                texts += [c.get("text", "") for c in item.get("content") or [] if c.get("type") == "output_text"]
            elif kind == "reasoning":
                thoughts += [s.get("text", "") for s in item.get("summary") or []]
        message = "\n".join(texts).strip()
        if not steps and any(item.get("type") == "message" for item in output):
            steps = [Step(message, "message", Action("answer", text=message) if message else Action("done"))]
        extra = {"message": message, "thought": "\n".join(thoughts), "safety_checks": checks}
        return Reading(json.dumps(output), steps, extra)

    # -- the inverse, for test servers: output items ---------------------------------------
    def xy(self, point: Point | None, sizes: Sizes) -> dict[str, int]:
        if point is None:
            raise Unexpressible("this computer_call action needs x, y")
        x, y = PIXELS.quantise(point, sizes.observation, sizes.sent)
        return {"x": int(x), "y": int(y)}

    def write(self, action: Action, sizes: Sizes) -> list[dict[str, Any]]:
        if action.type in ("done", "answer"):
            text = action.text or ""
            return [{"type": "message", "id": "msg_0", "role": "assistant", "status": "completed",
                     "content": [{"type": "output_text", "text": text, "annotations": []}]}]
        if action.type not in WRITERS:
            raise Unexpressible(f"OpenAI computer use has no action for {action.type}")
        return [{"type": "computer_call", "id": f"cu_{i}", "call_id": f"call_{i}", "action": act,
                 "pending_safety_checks": [], "status": "completed"}
                for i, act in enumerate(WRITERS[action.type](self, action, sizes))]


Writer = Callable[[OpenAIComputerUse, Action, Sizes], list[dict[str, Any]]]


def _key_name(k: str) -> str:
    return k.upper() if k.islower() else k     # the model writes CTRL, A; X keysyms keep their case


WRITERS: dict[str, Writer] = {
    "click": lambda f, a, s: [{"type": "click", "button": "left", **f.xy(a.point, s)}],
    "right_click": lambda f, a, s: [{"type": "click", "button": "right", **f.xy(a.point, s)}],
    "double_click": lambda f, a, s: [{"type": "double_click", **f.xy(a.point, s)}],
    "hover": lambda f, a, s: [{"type": "move", **f.xy(a.point, s)}],
    "drag": lambda f, a, s: [{"type": "drag", "path": [f.xy(a.point, s), f.xy(a.end_point, s)]}],
    # a point-given type is a click there, then the typing
    "type": lambda f, a, s: ((WRITERS["click"](f, a, s) if a.point else []) + [{"type": "type", "text": a.text}]),
    "scroll": lambda f, a, s: [{"type": "scroll", **f.xy(a.point, s), "scroll_x": a.scroll[0] * NOTCH_PIXELS,
                                "scroll_y": a.scroll[1] * NOTCH_PIXELS}],
    "key": lambda f, a, s: [{"type": "keypress", "keys": [_key_name(k) for k in combo_keys(a.keys or "")]}],
    "wait": lambda f, a, s: [{"type": "wait"}],
}


class ResponsesDialogue:
    path = "responses"

    def __init__(self, fmt: OpenAIComputerUse):
        self.fmt = fmt
        self.reset()

    def reset(self) -> None:
        self.previous: str | None = None
        self.calls: dict[str, dict[str, Any]] = {}     # call_id -> its safety checks and its screenshot
        self.last: str | None = None

    def handed(self, step: Step) -> None:
        self.last = step.call_id

    def observed(self, image_url: str | None) -> None:
        if self.last in self.calls:
            self.calls[self.last]["image"] = image_url

    def request(self, task: str, image_url: str | None, sizes: Sizes, text: str | None = None) -> dict[str, Any]:
        assert image_url is not None, "the agent refuses this format in a mode without a screenshot"
        prompt = shown(openai_computer_use(task, sizes.sent, image_url), True, text)
        first = {"input": responses_input(prompt.messages), "tools": prompt.tools, **prompt.extra}
        if self.previous is None:
            return first
        outputs: list[dict[str, Any]] = [
            {"type": "computer_call_output", "call_id": call_id, "acknowledged_safety_checks": call["checks"],
             "output": {"type": "input_image", "image_url": call["image"] or image_url}}
            for call_id, call in self.calls.items()]
        if outputs and text:   # the current screen's tree or marks, after the screenshots of the calls
            outputs.append({"role": "user", "content": [{"type": "input_text", "text": text}]})
        # after a reply without calls the episode goes on (the environment did not end it):
        # the task and the screen again, in the same conversation
        return {**first, "previous_response_id": self.previous, "input": outputs or first["input"]}

    def read(self, reply: dict[str, Any], image_url: str | None, sizes: Sizes, cursor: Point | None,
             marks: Marks | None = None) -> Reading:
        reading = self.fmt.parse(reply, sizes)
        if not isinstance(reply.get("id"), str):
            raise ReplyError("a response without an id")
        self.previous, self.last = reply["id"], None
        self.calls = {cid: {"checks": checks, "image": None} for cid, checks in reading.extra["safety_checks"].items()}
        return reading

