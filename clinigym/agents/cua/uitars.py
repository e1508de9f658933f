"""UI-TARS-1.5 as a computer-use agent: its COMPUTER_USE prompt (Thought + Action), its
action calls read with Python's own parser, and their inverse.

Coordinates are absolute pixels of the smart-resized screenshot (factor 28, min_pixels
100*28*28, max_pixels 16384*28*28), exactly as the `ui-tars-1.5` grounding family sends
and reads them; a point is written `start_box='(x,y)'` (README_deploy's expected output),
`'<|box_start|>(x,y)<|box_end|>'` (the prompt) or `point='<point>x y</point>'` (the
parser's Doubao form); a box of four numbers is read as its centre.

Mapping onto the environment's actions (codes/ui_tars/action_parser.py executes them):
click and left_single -> click, left_double -> double_click, right_single -> right_click,
hover -> hover, drag and select -> drag, type -> type (a trailing "\\n" is typed as Return,
as the display types it), hotkey(key='ctrl c') and press(key=...) -> key('ctrl+c'),
scroll(direction) -> 5 wheel notches that way at the point (the parser's
pyautogui.scroll(+-5); without a point, at the pointer), scroll with an end_box -> drag (the
parser's gesture scroll), wait -> wait, finished(content) -> answer(content) or done()
when it carries no text, call_user (UI-TARS v1's "the task is unsolvable") -> fail. Any
other call (keydown, long_press, open_app, ...) has no equivalent and is refused.

In the som mode a call may name marks instead of boxes: ``mark=N`` in place of
start_box, ``end_mark=N`` in place of end_box (``click(mark=12)``, ``drag(mark=3,
end_mark=7)``); a number with no mark refuses the call.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from clinigym.agents.cua.base import Reading, Sizes, Step, Unexpressible, combo_keys, key_combo, last_pointer, to_step
from clinigym.agents.cua.chat import ChatFormat
from clinigym.agents.cua.history import History, all_texts
from clinigym.agents.families import get_family
from clinigym.agents.families.coords import Point, centre
from clinigym.agents.families.observed import MarkError, Marks, mark_at, mark_centre
from clinigym.agents.families.syntax import numbers
from clinigym.agents.families.thinking import strip_think
from clinigym.core.actions import Action
from clinigym.core.marks import Mark

# bytedance/UI-TARS codes/prompts.py COMPUTER_USE (README "Prompt Usage Guide": desktop
# tasks), verbatim; the escapes are the file's, so the model reads \', \" and \n.
COMPUTER_USE = (
    "You are a GUI agent. You are given a task and your action history, with screenshots. "
    "You need to perform the next action to complete the task.\n\n"
    "## Output Format\n```\nThought: ...\nAction: ...\n```\n\n"
    "## Action Space\n\n"
    "click(start_box='<|box_start|>(x1,y1)<|box_end|>')\n"
    "left_double(start_box='<|box_start|>(x1,y1)<|box_end|>')\n"
    "right_single(start_box='<|box_start|>(x1,y1)<|box_end|>')\n"
    "drag(start_box='<|box_start|>(x1,y1)<|box_end|>', end_box='<|box_start|>(x3,y3)<|box_end|>')\n"
    "hotkey(key='')\n"
    "type(content='xxx') # Use escape characters \\', \\\", and \\n in content part to ensure we can parse "
    "the content in normal python string format. If you want to submit your input, use \\n at the end of "
    "content. \n"
    "scroll(start_box='<|box_start|>(x1,y1)<|box_end|>', direction='down or up or right or left')\n"
    "wait() #Sleep for 5s and take a screenshot to check for any changes.\n"
    "finished(content='xxx') # Use escape characters \\', \\\", and \\n in content part to ensure we can "
    "parse the content in normal python string format.\n\n\n"
    "## Note\n- Use {language} in `Thought` part.\n"
    "- Write a small plan and finally summarize your next action (with its target element) in one sentence "
    "in `Thought` part.\n\n"
    "## User Instruction\n{instruction}\n")
LANGUAGE = "English"
SCROLL_NOTCHES = 5        # action_parser.py: pyautogui.scroll(5) up, scroll(-5) down
DIRECTIONS = {"down": (0, SCROLL_NOTCHES), "up": (0, -SCROLL_NOTCHES),
              "right": (SCROLL_NOTCHES, 0), "left": (-SCROLL_NOTCHES, 0)}
START_KEYS = ("start_box", "start_point", "point")   # the parser renames point= to start_box=
END_KEYS = ("end_box", "end_point")
_THOUGHT = re.compile(r"(?:Thought|Reflection|Action_Summary):\s*(.*?)\s*(?=Action:|\Z)", re.S)
_CONTENT_CALL = re.compile(r"(\w+)\(content='(.*)'\)", re.S)


@dataclass(frozen=True)
class _Args:
    kwargs: dict[str, object]
    point: Point | None          # start point in observation pixels
    end: Point | None
    cursor: Point | None

    def text(self, *keys: str) -> str:
        for k in keys:
            v = self.kwargs.get(k)
            if isinstance(v, str) and v:
                return v
        return ""


def _pointer(kind: str) -> Callable[[_Args], Action | str]:
    return lambda a: Action(kind, a.point) if a.point else f"{kind} needs a start_box"


def _drag(a: _Args) -> Action | str:
    return Action("drag", a.point, a.end) if a.point and a.end else "drag needs start_box and end_box"


def _type(a: _Args) -> Action | str:
    content = a.text("content")
    return Action("type", text=content) if content else "type without content"


def _hotkey(a: _Args) -> Action | str:
    keys = a.text("key", "hotkey")
    return Action("key", keys=key_combo(keys.split())) if keys.strip() else "hotkey without keys"


def _press(a: _Args) -> Action | str:
    key = a.text("key", "press")
    return Action("key", keys=key_combo([key])) if key.strip() else "press without a key"


def _scroll(a: _Args) -> Action | str:
    if a.point and a.end:                       # the parser's gesture scroll: press, move, release
        return Action("drag", a.point, a.end)
    at = a.point or a.cursor
    direction = a.text("direction").strip().lower()
    if direction not in DIRECTIONS:
        return f"scroll direction {direction!r} is not one of {', '.join(DIRECTIONS)}"
    if at is None:
        return "scroll without start_box before any pointer action"
    return Action("scroll", at, scroll=DIRECTIONS[direction])


def _finished(a: _Args) -> Action | str:
    content = a.text("content")
    return Action("answer", text=content) if content.strip() else Action("done")


MAPPING: dict[str, Callable[[_Args], Action | str]] = {
    "click": _pointer("click"), "left_single": _pointer("click"), "left_double": _pointer("double_click"),
    "right_single": _pointer("right_click"), "hover": _pointer("hover"), "drag": _drag, "select": _drag,
    "type": _type, "hotkey": _hotkey, "press": _press, "scroll": _scroll, "wait": lambda a: Action("wait"),
    "finished": _finished, "call_user": lambda a: Action("fail", text="call_user()"),
}


def _unescape(text: str) -> str:
    return text.replace("\\n", "\n").replace("\\'", "'").replace('\\"', '"')


def _one(piece: str) -> tuple[str, str | None, dict[str, object]]:
    """One call: (its text, its name or None when unreadable, its keyword constants)."""
    piece = piece.strip()
    try:
        node = ast.parse(piece, mode="eval").body
    except SyntaxError:
        # type(content='it's') with an unescaped quote, as the official parser tolerates
        m = _CONTENT_CALL.fullmatch(piece)
        return (piece, m[1], {"content": _unescape(m[2])}) if m else (piece, None, {})
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return piece, None, {}
    return piece, node.func.id, {k.arg: k.value.value for k in node.keywords
                                 if k.arg and isinstance(k.value, ast.Constant)}


def calls(block: str) -> list[tuple[str, str | None, dict[str, object]]]:
    """The calls after "Action:", one per blank-line separated piece (action_parser.py
    splits on ")\\n\\n")."""
    return [_one(p) for p in re.split(r"(?<=\))\s*\n\s*\n", block.strip()) if p.strip()]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")


class UiTars(ChatFormat):
    name = "ui-tars-1.5"
    description = "UI-TARS-1.5 computer use: COMPUTER_USE prompt, Thought + Action"
    coords = "absolute pixels of the smart-resized screenshot (factor 28, 100..16384 x 28x28 pixels)"
    sources = ("bytedance/UI-TARS codes/prompts.py (COMPUTER_USE), README.md (Prompt Usage Guide)",
               "bytedance/UI-TARS codes/ui_tars/action_parser.py (calls, start_box/point, scroll +-5, finished)",
               "bytedance/UI-TARS README_deploy.md (expected output), README_coordinates.md")
    family = get_family("ui-tars-1.5")
    space = family.space
    resize = family.resize
    mark_hint = "mark=N in place of start_box, end_mark=N in place of end_box, e.g. click(mark=12)"

    def messages(self, task: str, history: History, image_url: str | None, sizes: Sizes,
                 actions: tuple[str, ...], text: str | None = None) -> list[dict]:
        return all_texts(history, COMPUTER_USE.format(language=LANGUAGE, instruction=task), image_url, text)

    def _native_point(self, kwargs: dict[str, object], keys: tuple[str, ...], sizes: Sizes) -> Point | None:
        for k in keys:
            v = kwargs.get(k)
            values = numbers(v) if isinstance(v, str) else ()
            if len(values) in (2, 4):
                return self.to_obs(centre(values), sizes)
        return None

    def _point(self, kwargs: dict[str, object], keys: tuple[str, ...], mark_key: str, sizes: Sizes,
               marks: Marks | None) -> tuple[Point | None, Mark | None]:
        """A point of a call: the centre of the mark it names, else its box's (MarkError)."""
        mark = mark_at(marks, kwargs.get(mark_key))
        return (mark_centre(mark), mark) if mark else (self._native_point(kwargs, keys, sizes), None)

    def parse(self, text: str, sizes: Sizes, cursor: Point | None, marks: Marks | None = None) -> Reading:
        body = strip_think(text)
        thought = _THOUGHT.search(body)
        extra = {"thought": thought[1]} if thought else {}
        if "Action:" not in body:
            return Reading(text, [], extra)
        steps = []
        for native, name, kwargs in calls(body.rsplit("Action:", 1)[1].strip().strip("`")):
            if name is None:
                steps.append(Step(native, "unreadable", None, "not a call UI-TARS' parser can read"))
                continue
            try:
                (start, start_mark), (end, end_mark) = (self._point(kwargs, START_KEYS, "mark", sizes, marks),
                                                        self._point(kwargs, END_KEYS, "end_mark", sizes, marks))
            except MarkError as exc:
                steps.append(Step(native, name, None, str(exc)))
                continue
            mapper = MAPPING.get(name)
            named = tuple(m for m in (start_mark, end_mark) if m is not None)
            steps.append(to_step(native, name, mapper(_Args(kwargs, start, end, cursor)) if mapper else
                                 f"{name} has no equivalent action", marks=named))
            cursor = last_pointer(steps[-1:], cursor)
        return Reading(text, steps, extra)

    # -- the inverse, for test servers -----------------------------------------------------
    def box(self, point: Point | None, sizes: Sizes) -> str:
        if point is None:
            raise Unexpressible("this UI-TARS call needs a point")
        x, y = self.to_native(point, sizes)
        return f"'({x},{y})'"

    def write(self, action: Action, sizes: Sizes) -> str:
        if action.type not in WRITERS:
            raise Unexpressible(f"UI-TARS has no call for {action.type}")
        return "Thought: The next step of the task.\nAction: " + "\n\n".join(WRITERS[action.type](self, action, sizes))


Writer = Callable[[UiTars, Action, Sizes], list[str]]


def _w_pointer(call: str) -> Writer:
    return lambda f, a, s: [f"{call}(start_box={f.box(a.point, s)})"]


def _w_scroll(f: UiTars, a: Action, s: Sizes) -> list[str]:
    direction = {v: k for k, v in DIRECTIONS.items()}.get(a.scroll)
    if direction is None:
        raise Unexpressible(f"UI-TARS scrolls {SCROLL_NOTCHES} notches along one axis, not {a.scroll}")
    return [f"scroll(start_box={f.box(a.point, s)}, direction='{direction}')"]


WRITERS: dict[str, Writer] = {
    "click": _w_pointer("click"), "double_click": _w_pointer("left_double"),
    "right_click": _w_pointer("right_single"), "hover": _w_pointer("hover"),
    "drag": lambda f, a, s: [f"drag(start_box={f.box(a.point, s)}, end_box={f.box(a.end_point, s)})"],
    # a point-given type is a click there, then the typing (UI-TARS' type has no point)
    "type": lambda f, a, s: ((WRITERS["click"](f, a, s) if a.point else [])
                             + [f"type(content='{_escape(a.text or '')}')"]),
    "scroll": _w_scroll,
    "key": lambda f, a, s: [f"hotkey(key='{' '.join(combo_keys(a.keys or ''))}')"],
    "wait": lambda f, a, s: ["wait()"],
    "done": lambda f, a, s: ["finished()"],
    "answer": lambda f, a, s: [f"finished(content='{_escape(a.text or '')}')"],
    "fail": lambda f, a, s: ["call_user()"],
}
