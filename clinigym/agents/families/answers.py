"""Writing points back in a family's native answer format (for a test server that
answers like the model). Each writer gets the points already in native units at the
family's precision (``Space.quantise``) and the ``Space`` that prints them; several
points are written in the model's own way of listing several answers, best first.
The examples in the docstrings are the published outputs the formats follow."""
from __future__ import annotations

import json

from clinigym.agents.families.coords import Point, Space

BOX_HALF = 5      # native units (of 1000) around a point when a family answers with boxes


def _box(p: Point, space: Space) -> tuple[float, float, float, float]:
    """A small box centred exactly on ``p`` (narrowed at the edges of [0, scale-1])."""
    hi = (space.scale or 1000) - 1
    hx = min(BOX_HALF, p[0], hi - p[0])
    hy = min(BOX_HALF, p[1], hi - p[1])
    return p[0] - hx, p[1] - hy, p[0] + hx, p[1] + hy


def tars_action(points: list[Point], space: Space) -> str:
    """``Action: click(start_box='(177,549)')``; several actions are separated by a
    blank line (bytedance/UI-TARS, README_deploy.md; codes/ui_tars/action_parser.py)."""
    calls = [f"click(start_box='({space.text(x)},{space.text(y)})')" for x, y in points]
    return "Action: " + "\n\n".join(calls)


def paren(sep: str = ","):
    """``(x,y)`` one per line: UI-TARS v1 grounding, UGround-V1 ``(x, y)``, SeeClick
    ``(0.17,0.06)``, the GPT pixel prompt."""
    def write(points: list[Point], space: Space) -> str:
        return "\n".join(f"({space.text(x)}{sep}{space.text(y)})" for x, y in points)
    return write


def box_tokens(points: list[Point], space: Space) -> str:
    """``<|box_start|>(576,12),(592,42)<|box_end|>`` (Qwen2-VL grounding; OS-Atlas-Base
    model card)."""
    out = []
    for p in points:
        x1, y1, x2, y2 = (space.text(v) for v in _box(p, space))
        out.append(f"<|box_start|>({x1},{y1}),({x2},{y2})<|box_end|>")
    return "".join(out)


def qwen_tool_call(points: list[Point], space: Space) -> str:
    """``<tool_call>{"name": "computer_use", "arguments": {"action": "left_click",
    "coordinate": [x, y]}}</tool_call>`` (Qwen2.5-VL computer_use function call)."""
    calls = []
    for x, y in points:
        call = {"name": "computer_use",
                "arguments": {"action": "left_click", "coordinate": [int(x), int(y)]}}
        calls.append(f"<tool_call>\n{json.dumps(call)}\n</tool_call>")
    return "\n".join(calls)


def qwen_points_json(points: list[Point], space: Space) -> str:
    """``[{"point_2d": [346, 328], "label": ...}, ...]`` in a json fence (Qwen3-VL
    point grounding)."""
    items = [{"point_2d": [int(x), int(y)], "label": "target"} for x, y in points]
    return "```json\n" + json.dumps(items) + "\n```"


def pyautogui_click(points: list[Point], space: Space) -> str:
    """``pyautogui.click(x=0.1175, y=0.0725)`` one per line (Aguvis)."""
    return "\n".join(f"pyautogui.click(x={space.text(x)}, y={space.text(y)})" for x, y in points)


def cogagent_click(points: list[Point], space: Space) -> str:
    """``Grounded Operation:CLICK(box=[[387,248,727,317]], element_type=..., element_info=...)``
    (THUDM/CogAgent, Action_space_en.md; three-digit numbers 000-999)."""
    ops = []
    for p in points:
        box = ",".join(space.text(v) for v in _box(p, space))
        ops.append("Action: Click the target element.\n"
                   f"Grounded Operation:CLICK(box=[[{box}]], element_type='Clickable text', "
                   "element_info='target')")
    return "\n".join(ops)


def computer_call(points: list[Point], space: Space) -> str:
    """The JSON of Responses-API ``computer_call`` output items (one per point; a JSON
    list when there are several)."""
    items = [{"type": "computer_call", "call_id": f"call_{i}",
              "action": {"type": "click", "button": "left", "x": int(x), "y": int(y)},
              "pending_safety_checks": [], "status": "completed"}
             for i, (x, y) in enumerate(points)]
    return json.dumps(items[0] if len(items) == 1 else items)
