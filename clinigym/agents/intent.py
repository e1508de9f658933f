"""What kind of action an instruction asks for, read from its words (for agents that
ground a point but do not choose the action type themselves)."""
from __future__ import annotations

import re

_QUOTED = re.compile(r"""'([^']+)'|"([^"]+)"|‘([^’]+)’|“([^”]+)”""")


def quoted(instruction: str) -> list[str]:
    """Quoted labels in order: 'x', "x", ‘x’, “x”."""
    return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(instruction)]


def action_type(instruction: str) -> str:
    text = instruction.lower()
    if re.search(r"double[- ]?click", text):
        return "double_click"
    if re.search(r"right[- ]?click", text):
        return "right_click"
    if re.search(r"\b(type|enter)\b", text) and quoted(instruction):
        return "type"
    return "click"


def typed_text(instruction: str) -> str | None:
    """For a type instruction, the text to type: its first quoted string."""
    labels = quoted(instruction)
    return labels[0] if action_type(instruction) == "type" and labels else None
