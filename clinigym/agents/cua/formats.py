"""The computer-use formats by name: each one's prompt, native action vocabulary and
coordinates, parser and writer (`clinigym agents` lists them)."""
from __future__ import annotations

from clinigym.agents.cua.chat import ChatFormat
from clinigym.agents.cua.json_actions import JsonActions
from clinigym.agents.cua.qwen import QWEN3, QWEN25
from clinigym.agents.cua.responses import OpenAIComputerUse
from clinigym.agents.cua.uitars import UiTars

Format = ChatFormat | OpenAIComputerUse

FORMATS: dict[str, Format] = {f.name: f for f in (UiTars(), QWEN25, QWEN3, OpenAIComputerUse(), JsonActions())}


def get_format(name: str) -> Format:
    key = name.strip().lower().replace("_", "-")
    if key not in FORMATS:
        raise KeyError(f"unknown computer-use format {name!r}; known: {', '.join(FORMATS)}")
    return FORMATS[key]
