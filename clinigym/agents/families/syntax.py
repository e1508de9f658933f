"""Finding coordinate groups in a model's answer text.

A ``Syntax`` is an ordered list of rules; the first rule that finds anything wins
and all of its matches are returned in order of appearance (best first: a model that
lists several candidates lists the best first). Each match yields a point (2
numbers) or a box (4 numbers); anything else is ignored. Numbers are read from the
text rather than from special tokens: ``<|box_start|>``/``<|box_end|>`` survive or
vanish depending on the server's ``skip_special_tokens``, so no rule depends on them.
Negative numbers are read as negative so that they fall outside the image instead
of being misread as positive.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

NUM = r"-?\d+(?:\.\d+)?"
_NUMBER = re.compile(NUM)

Group = tuple[float, ...]


def numbers(fragment: str) -> Group:
    return tuple(float(v) for v in _NUMBER.findall(fragment))


def _from_fragment(match: re.Match) -> Group | None:
    """Every number of the first capture group (or of the whole match)."""
    fragment = match.group(1) if match.re.groups else match.group(0)
    return numbers(fragment)


def _from_groups(match: re.Match) -> Group | None:
    """One number per capture group."""
    return tuple(float(v) for v in match.groups())


def _json_xy(types: tuple[str, ...] | None) -> Callable[[re.Match], Group | None]:
    """An innermost JSON object with numeric "x" and "y" (and, when ``types`` is
    given, a "type" among them)."""
    def take(match: re.Match) -> Group | None:
        try:
            obj = json.loads(match.group(0))
        except ValueError:
            return None
        if types is not None and obj.get("type") not in types:
            return None
        x, y = obj.get("x"), obj.get("y")
        if isinstance(x, bool) or isinstance(y, bool) or not all(isinstance(v, (int, float)) for v in (x, y)):
            return None
        return float(x), float(y)
    return take


@dataclass(frozen=True)
class Rule:
    name: str
    regex: re.Pattern
    take: Callable[[re.Match], Group | None] = _from_fragment

    def find(self, text: str) -> list[Group]:
        out = []
        for m in self.regex.finditer(text):
            g = self.take(m)
            if g is not None and len(g) in (2, 4):
                out.append(g)
        return out


@dataclass(frozen=True)
class Syntax:
    name: str
    rules: tuple[Rule, ...]

    def extract(self, text: str) -> list[Group]:
        for rule in self.rules:
            found = rule.find(text)
            if found:
                return found
        return []


def syntax(name: str, rules: Iterable[Rule]) -> Syntax:
    return Syntax(name, tuple(rules))


# --- rules -------------------------------------------------------------------------

# UI-TARS actions: click(start_box='(x,y)'), click(start_box='<|box_start|>(x,y)<|box_end|>'),
# click(point='<point>x y</point>'), boxes '(x1,y1,x2,y2)'; only the press point of a
# drag (start_*) is taken. bytedance/UI-TARS, codes/ui_tars/action_parser.py and
# codes/prompts.py (fork yji0728/UI-TARS).
TARS_ACTION = Rule("tars_action", re.compile(
    r"\b(?:start_box|start_point|point)\s*=\s*['\"]([^'\"]*)['\"]"))

# Qwen2-VL / OS-Atlas boxes "(x1,y1),(x2,y2)" (with or without the box tokens) and
# plain tuples "(x, y)" or "(x1, y1, x2, y2)", in one pass so that a box's two corners
# are not read as two points.
PAREN = Rule("paren", re.compile(
    rf"\(\s*{NUM}\s*,\s*{NUM}\s*\)\s*,\s*\(\s*{NUM}\s*,\s*{NUM}\s*\)"
    rf"|\(\s*{NUM}\s*,\s*{NUM}\s*(?:,\s*{NUM}\s*,\s*{NUM}\s*)?\)"))

# Only "(x, y)" pairs (pixel prompts ask for one point).
PAREN_POINT = Rule("paren_point", re.compile(rf"\(\s*({NUM})\s*,\s*({NUM})\s*\)"), _from_groups)

# Qwen JSON grounding: {"bbox_2d": [..]}, {"point_2d": [..]}, and the computer_use /
# mobile_use tool call {"action": "left_click", "coordinate": [x, y]} (QwenLM cookbooks).
QWEN_JSON = Rule("qwen_json", re.compile(
    r"[\"'](?:bbox_2d|point_2d|coordinate)[\"']\s*:\s*\[([^\]\[]*)\]"))

# Aguvis: pyautogui.click(x=0.12, y=0.07) or positional (xlang-ai/aguvis; the
# ScreenSpot-Pro Aguvis adapter, ZeonLap/ScreenSpot-Pro-GUI-Grounding models/aguvis.py).
PYAUTOGUI = Rule("pyautogui", re.compile(
    rf"pyautogui\.(?:click|doubleClick|rightClick|tripleClick|moveTo)\s*\(\s*(?:x\s*=\s*)?({NUM})"
    rf"\s*,\s*(?:y\s*=\s*)?({NUM})"), _from_groups)

# CogAgent: CLICK(box=[[387,248,727,317]], ...) (THUDM/CogAgent, Action_space_en.md).
COGAGENT_BOX = Rule("cogagent_box", re.compile(r"\b(?:box|point)\s*=\s*\[\[?([^\]\[]*)\]?\]"))

# OpenAI computer use: a computer_call's action {"type": "click", "x": .., "y": ..}
# (legacy "action" object or the newer "actions" list).
COMPUTER_CALL = Rule("computer_call", re.compile(r"\{[^{}]*\}"),
                     _json_xy(("click", "double_click")))

# A bare JSON point {"x": .., "y": ..} or [x, y] (GPT answers in JSON).
JSON_XY = Rule("json_xy", re.compile(r"\{[^{}]*\}"), _json_xy(None))
JSON_PAIR = Rule("json_pair", re.compile(rf"\[\s*({NUM})\s*,\s*({NUM})\s*\]"), _from_groups)
