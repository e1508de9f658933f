"""Removing a reasoning model's thoughts before looking for coordinates.

A thought often mentions coordinates ("the button near (120, 40) is disabled"), so
only the text outside ``<think>...</think>`` is parsed:

- every closed ``<think>...</think>`` block is removed;
- an unclosed ``<think>`` (generation cut off, or max_tokens reached mid-thought)
  hides everything after it;
- a lone ``</think>`` without its opening tag hides everything before it (chat
  templates of thinking models, e.g. Qwen3 "Thinking", put ``<think>`` in the prompt,
  so the completion starts inside the thought).

MedSPOT's evaluation scripts remove only closed blocks
(Tajamul21/MedSPOT, Evaluation_scripts/evaluate_qwen2_5vl.py and others).
"""
from __future__ import annotations

import re

_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN = re.compile(r"<think>", re.IGNORECASE)
_CLOSE = re.compile(r"</think>", re.IGNORECASE)


def strip_think(text: str) -> str:
    text = _BLOCK.sub(" ", text or "")
    closes = list(_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end():]
    opened = _OPEN.search(text)
    if opened:
        text = text[:opened.start()]
    return text
