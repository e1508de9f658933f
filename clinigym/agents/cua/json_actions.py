"""A generic prompt for general vision-language models: the environment's own actions,
one JSON object per turn in the environment's dict form (`Action.to_json`: "type",
"point", "end_point", "text", "keys", "scroll"), points in pixels of the screenshot as
sent (the observation itself). The prompt is this project's own (no published one
exists for this vocabulary); it lists only the action types the environment accepts.
Several objects in one answer are several actions, in order. In the som mode an object
may name marks instead of points: "mark" in place of "point", "end_mark" in place of
"end_point" (``{"type": "click", "mark": 12}``); a number with no mark refuses it."""
from __future__ import annotations

import dataclasses
import json

from clinigym.agents.cua.base import Reading, Sizes, Step
from clinigym.agents.cua.chat import ChatFormat
from clinigym.agents.cua.history import History, summarised
from clinigym.agents.families.coords import PIXELS, Point
from clinigym.agents.families.observed import MarkError, Marks, mark_at, mark_centre
from clinigym.agents.families.resize import AsIs
from clinigym.agents.families.thinking import strip_think
from clinigym.core.actions import ACTIONS, Action, InvalidAction, from_mapping

SYSTEM = (
    "You operate a computer program through its screen. Each turn you get the task and the current screenshot "
    "({w}x{h} pixels; x to the right and y down from the top-left corner), and you reply with the next action "
    "as one JSON object and nothing else. The actions:\n{actions}\n"
    "A point is [x, y] in pixels of the screenshot. \"scroll\" is [dx, dy] in wheel notches; dy > 0 scrolls "
    "down.{endings}")
# What each ending means, said for those the environment accepts.
ENDINGS = {"done": "done when the task is complete",
           "answer": "answer with the answer, as its text, when the task asks for information",
           "fail": "fail with the reason, as its text, when the task cannot be done"}
# One example of every action type, shown in the prompt in its JSON form.
SAMPLES = {
    "click": Action("click", (812, 44)), "double_click": Action("double_click", (812, 44)),
    "right_click": Action("right_click", (812, 44)), "drag": Action("drag", (100, 200), (300, 200)),
    "hover": Action("hover", (812, 44)), "type": Action("type", (400, 120), text="PHANTOM"),
    "scroll": Action("scroll", (960, 540), scroll=(0, 3)), "key": Action("key", keys="ctrl+s"),
    "wait": Action("wait"), "done": Action("done"), "fail": Action("fail", text="the study is not listed"),
    "answer": Action("answer", text="42"),
}
_DECODER = json.JSONDecoder()


def objects(text: str) -> list[tuple[str, dict]]:
    """Every top-level JSON object with a "type" in the text, with its source."""
    out, i = [], text.find("{")
    while i >= 0:
        try:
            obj, end = _DECODER.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict) and "type" in obj:
            out.append((text[i:end], obj))
            i = text.find("{", end)
        else:   # a wrapper ({"thought": ..., "action": {...}}): look inside it
            i = text.find("{", i + 1)
    return out


class JsonActions(ChatFormat):
    name = "json"
    description = "any vision-language model: the environment's actions as one JSON object per turn"
    coords = "pixels of the screenshot as sent (the observation itself), stated in the prompt"
    sources = ("clinigym.core.actions (the action registry and its dict form); this project's prompt",)
    space = PIXELS
    resize = AsIs()
    mark_hint = ('"mark": N in place of "point", "end_mark": N in place of "end_point", '
                 'e.g. {"type": "click", "mark": 12}')

    def system(self, sizes: Sizes, actions: tuple[str, ...]) -> str:
        listed = [a for a in actions or tuple(ACTIONS) if a in SAMPLES]
        lines = "\n".join(f"- {ACTIONS[a].form}: {json.dumps(SAMPLES[a].to_json())}" for a in listed)
        endings = "; ".join(ENDINGS[a] for a in listed if a in ENDINGS)
        return SYSTEM.format(w=sizes.sent[0], h=sizes.sent[1], actions=lines,
                             endings=f" Reply {endings}." if endings else "")

    def messages(self, task: str, history: History, image_url: str | None, sizes: Sizes,
                 actions: tuple[str, ...], text: str | None = None) -> list[dict]:
        return summarised(history, self.system(sizes, actions), task, image_url, text)

    def _step(self, native: str, obj: dict, sizes: Sizes, marks: Marks | None) -> Step:
        name = obj.get("type")
        if not isinstance(name, str):
            return Step(native, "unreadable", None, f"the type {name!r} is not an action name")
        try:
            sent = from_mapping(obj)
            start, end = mark_at(marks, obj.get("mark")), mark_at(marks, obj.get("end_mark"))
        except (InvalidAction, MarkError) as exc:
            return Step(native, name, None, str(exc))
        action = dataclasses.replace(
            sent, point=mark_centre(start) if start else sent.point and self.to_obs(sent.point, sizes),
            end_point=mark_centre(end) if end else sent.end_point and self.to_obs(sent.end_point, sizes))
        return Step(native, name, action, marks=tuple(m for m in (start, end) if m is not None))

    def parse(self, text: str, sizes: Sizes, cursor: Point | None, marks: Marks | None = None) -> Reading:
        return Reading(text, [self._step(src, obj, sizes, marks) for src, obj in objects(strip_think(text))])

    def write(self, action: Action, sizes: Sizes) -> str:
        def native(p: Point | None) -> list[int] | None:
            return None if p is None else [int(v) for v in self.space.quantise(p, sizes.observation, sizes.sent)]
        data = action.to_json()
        data.update({k: native(getattr(action, k)) for k in ("point", "end_point") if k in data})
        return json.dumps(data)
