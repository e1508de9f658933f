"""An episode's past turns, and the two ways the chat formats lay them out.

Every turn keeps the screenshot the model saw and its raw answer. A request carries the
last `images` screenshots as images (the current one included); older turns stay as text
only. `reset()` empties it (the agent's reset: a new episode).

- `all_texts` (UI-TARS): the task prompt, then every past answer as an assistant turn,
  each preceded by its screenshot while that is within the window, then the current
  screenshot. ByteDance's note on UI-TARS agents: "reserve all texts and most recent 5
  images"; the same layout as OSWorld's UI-TARS agent (image user turns, assistant
  answers).
- `summarised` (Qwen, JSON): a system prompt; the first user turn holds the task and the
  older turns as "Step i: ..." lines, then the turns within the window as screenshot /
  answer pairs, then the current screenshot (OSWorld's Qwen3-VL agent: "Please generate
  the next move according to the UI screenshot, instruction and previous actions.").

What else the current observation shows (the tree text, the mark list:
`clinigym.agents.families.observed`) follows the current screenshot in its user message;
past turns keep their screenshots only. In a mode without screenshots (a11y) the window
is the current turn alone, so every past turn is text.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clinigym.agents.families.observed import parts
from clinigym.agents.families.prompts import image_part, system, text_part, user
from clinigym.agents.families.thinking import strip_think


@dataclass(frozen=True)
class Turn:
    image_url: str | None   # the screenshot as sent (None: the mode has none)
    answer: str             # the model's raw answer


class History:
    def __init__(self, images: int = 3):
        if images < 1:
            raise ValueError(f"a request carries at least the current screenshot, got images={images}")
        self.images = images
        self.turns: list[Turn] = []

    def reset(self) -> None:
        self.turns.clear()

    def add(self, turn: Turn) -> None:
        self.turns.append(turn)

    def split(self) -> tuple[list[Turn], list[Turn]]:
        """(older turns, text only; recent turns, with their screenshots)."""
        cut = max(0, len(self.turns) - (self.images - 1))
        return self.turns[:cut], self.turns[cut:]


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _screenshot(turn: Turn) -> dict[str, Any]:
    assert turn.image_url is not None, "a turn within the window has its screenshot"
    return image_part(turn.image_url)


def all_texts(history: History, prompt: str, image_url: str | None, text: str | None = None) -> list[dict[str, Any]]:
    older, _ = history.split()
    messages = [user(text_part(prompt))]
    for i, turn in enumerate(history.turns):
        if i >= len(older):
            messages.append(user(_screenshot(turn)))
        messages.append(assistant(turn.answer))
    messages.append(user(*parts(image_url, text)))
    return messages


PREVIOUS = ("Please generate the next move according to the UI screenshot, instruction and previous actions."
            "\n\nInstruction: {task}\n\nPrevious actions:\n{previous}")


def summary(answer: str) -> str:
    """A past answer on one line (its thoughts left out)."""
    return " ".join(strip_think(answer).split())


def summarised(history: History, system_text: str, task: str, image_url: str | None,
               text: str | None = None) -> list[dict[str, Any]]:
    older, recent = history.split()
    lines = "\n".join(f"Step {i + 1}: {summary(t.answer)}" for i, t in enumerate(older)) or "None"
    lead = text_part(PREVIOUS.format(task=task, previous=lines))
    shots = [[_screenshot(t)] for t in recent] + [parts(image_url, text)]
    messages = [system(system_text), user(lead, *shots[0])]
    for turn, shot in zip(recent, shots[1:]):
        messages += [assistant(turn.answer), user(*shot)]
    return messages
