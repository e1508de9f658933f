"""What a model-server request shows of an observation besides the instruction, by
observation mode (`clinigym.envs.observations`), and an answer that names a mark.

| mode | the image sent | the text added |
|---|---|---|
| ``screenshot`` | the screenshot | none: the published prompt, unchanged |
| ``a11y`` | none | the tree text |
| ``screenshot+a11y`` | the screenshot | the tree text |
| ``som`` | the screenshot, marks drawn on it | the mark list, and how to answer with a mark |

The text is one text part at the end of the request's last user message (the current
observation's): a sentence saying what follows and in which pixels its boxes are (the
observation's), then the tree text or the mark list (`clinigym.core.marks.marks_text`),
cut at a line to at most `MAX_A11Y_CHARS` characters, a last line saying how many lines
were left out.

In the ``som`` mode a model may name a mark instead of giving coordinates, in its own
answer syntax with a ``mark`` argument (each family's and format's ``mark_hint`` says
how; `MARK` reads ``mark=12``, ``mark='12'``, ``"mark": 12``): the point is the mark's box
centre, in observation pixels. A number the screen has no mark for gives no point, and
`MarkError` says why.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from clinigym.agents.families.coords import Point, Size, centre, inside
from clinigym.agents.families.prompts import Prompt, image_part, text_part
from clinigym.core.errors import AgentError
from clinigym.core.marks import Mark, marks_from_json, marks_text

# The observation modes that give a screenshot (`clinigym.envs.observations`).
SCREENSHOT = ("screenshot", "screenshot+a11y", "som")
MAX_A11Y_CHARS = 40_000   # characters of tree text or mark list per request: about 10,000 tokens
TREE_LEAD = ("The program's accessibility tree of this screen follows, one element per line, indented by depth: "
             "[n] role \"name\" (x1,y1,x2,y2) states, boxes in pixels of the {w}x{h} screen.")
MARKS_LEAD = ("The screenshot shows numbered marks on the program's interactive elements, listed below as "
              "[mark] role \"name\" (x1,y1,x2,y2), boxes in pixels of the {w}x{h} screen.")
MARK_ANSWER = " To act on a marked element, you may name its mark instead of coordinates: {hint}."
CUT = "[cut here: {rest} of {total} lines left out; a request carries at most {limit} characters of them]"
MARK = re.compile(r"\bmark[\"']?\s*[:=]\s*[\"']?(-?\d+(?:\.\d+)?)")


class MarkError(AgentError, ValueError):
    """A mark an answer names that gives no point: the reason."""


@dataclass(frozen=True)
class Marks:
    """The marks of one observation (``som`` mode), by number."""
    by_number: Mapping[int, Mark]
    size: Size                        # the observation's (w, h)

    @classmethod
    def from_json(cls, text: str, size: Size) -> Marks:
        return cls({m.number: m for m in marks_from_json(text)}, size)

    def named(self, value: object) -> Mark:
        """The mark a number (an int, or its digits as text) names; MarkError when it names
        none, or one whose centre lies outside the observation."""
        number = value if isinstance(value, int) and not isinstance(value, bool) else None
        if isinstance(value, str) and value.strip().isdigit():
            number = int(value)
        if number is None:
            raise MarkError(f"mark {value!r} is not a mark number")
        if number not in self.by_number:
            held = f"its marks are 1 to {len(self.by_number)}" if self.by_number else "it has no marks"
            raise MarkError(f"no mark {number} on this screen ({held})")
        mark = self.by_number[number]
        x, y = mark_centre(mark)
        if not inside((x, y), self.size):
            raise MarkError(f"mark {number}'s centre ({x:g}, {y:g}) is outside the screen")
        return mark


def mark_centre(mark: Mark) -> Point:
    """Where an answer that names the mark points: its box's centre, in observation pixels."""
    return centre(tuple(mark.box.as_list()))


def mark_at(marks: Marks | None, value: object) -> Mark | None:
    """The mark a call's argument names: None without marks (not ``som``) or without the
    argument; MarkError when it names none."""
    return None if marks is None or value is None else marks.named(value)


def named_marks(text: str, marks: Marks) -> tuple[list[Mark], list[str]]:
    """The marks an answer names with `MARK`, in order, and why each other number names none."""
    found, problems = [], []
    for written in MARK.findall(text):
        try:
            found.append(marks.named(int(written) if written.lstrip("-").isdigit() else written))
        except MarkError as exc:
            problems.append(str(exc))
    return found, problems


def cut(text: str, limit: int) -> str:
    """`text` whole when it fits in `limit` characters, else its first whole lines that fit
    (the start of the first line when none does) and a line saying how many were left out."""
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    kept: list[str] = []
    size = 0                     # of the kept lines joined, and the newline before the next one
    for line in lines:
        if size + len(line) > limit:
            break
        kept.append(line)
        size += len(line) + 1
    head = "\n".join(kept) if kept else lines[0][:limit]
    return f"{head}\n{CUT.format(rest=len(lines) - len(kept), total=len(lines), limit=limit)}"


@dataclass(frozen=True)
class Observed:
    """What one request shows of an observation."""
    size: Size                         # the observation's (w, h): answers are read against it
    image: np.ndarray | None           # the screenshot as the observation gives it; None in a11y mode
    tree: str | None = None            # the tree text (a11y, screenshot+a11y)
    marks: Marks | None = None         # the marks (som; the image shows them)

    @classmethod
    def of(cls, observation: Mapping[str, Any], size: Size | None = None) -> Observed:
        """From an observation's fields; `size` (the context's observation size) is needed
        only when it holds no screenshot."""
        image = observation.get("screenshot")
        if image is not None:
            size = (int(image.shape[1]), int(image.shape[0]))
        elif size is None:
            raise AgentError("an observation without a screenshot: the agent needs its context's "
                             "observation_size to read coordinates")
        marks = observation.get("marks")
        return cls(size, image, observation.get("a11y"), None if marks is None else Marks.from_json(marks, size))

    def text(self, hint: str | None, limit: int = MAX_A11Y_CHARS) -> str | None:
        """The text a request adds (None in the screenshot mode): what follows, then the tree
        or the mark list, cut to `limit` characters; `hint` says how the model names a mark
        (None: it cannot, and is not told)."""
        w, h = self.size
        pieces = []
        if self.tree is not None:
            pieces.append(f"{TREE_LEAD.format(w=w, h=h)}\n{cut(self.tree, limit)}")
        if self.marks is not None:
            lead = MARKS_LEAD.format(w=w, h=h) + (MARK_ANSWER.format(hint=hint) if hint else "")
            pieces.append(f"{lead}\n{cut(marks_text(list(self.marks.by_number.values())), limit)}")
        return "\n\n".join(pieces) or None


def parts(image_url: str | None, text: str | None) -> list[dict[str, Any]]:
    """The current observation's parts of a user message: the screenshot, then the text."""
    return ([image_part(image_url)] if image_url else []) + ([text_part(text)] if text else [])


def shown(prompt: Prompt, image: bool, text: str | None) -> Prompt:
    """A family's prompt as the observation gives it: without its image parts when there
    is no screenshot, the text appended to its last user message."""
    if image and not text:
        return prompt
    messages = [dict(m) for m in prompt.messages]
    for m in messages:
        if not image and isinstance(m["content"], list):
            m["content"] = [p for p in m["content"] if p.get("type") != "image_url"]
    if text:
        last = max(i for i, m in enumerate(messages) if m["role"] == "user")
        messages[last]["content"] = [*messages[last]["content"], text_part(text)]
    return dataclasses.replace(prompt, messages=messages)
