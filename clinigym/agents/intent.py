"""What an instruction asks for, read from its words: the quoted labels, the kind of
action, the text to type. Shared by the agents that ground a point but do not choose
the action type themselves (OCR, HTTP models)."""
from __future__ import annotations

import re

# Quotes, but not apostrophes: "the patient's 'Study' tab" quotes only Study.
QUOTE = re.compile(r"(?<![\w])'([^']+?)'(?![\w])|\"([^\"]+)\"|‘([^’]+)’|“([^”]+)”")
TYPE_VERB = re.compile(r"\b(type|enter|input|write)\b", re.I)


def quoted(instruction: str) -> list[str]:
    """Quoted labels in order."""
    return [next(g for g in m.groups() if g is not None) for m in QUOTE.finditer(instruction)]


def pointer_action(instruction: str) -> str:
    """click, double_click, right_click or hover."""
    low = instruction.lower()
    if re.search(r"\bdouble[\s-]?click", low):
        return "double_click"
    if re.search(r"\bright[\s-]?click", low):
        return "right_click"
    if re.search(r"\bhover\b|\bmouse over\b", low):
        return "hover"
    return "click"


def typed_text(instruction: str) -> str | None:
    """For a type instruction ("Type the file name 'x'"), the first quoted text after the verb."""
    verb = TYPE_VERB.search(instruction)
    if not verb:
        return None
    after = quoted(instruction[verb.end():])
    return after[0] if after else None


def action_type(instruction: str) -> str:
    return "type" if typed_text(instruction) else pointer_action(instruction)
