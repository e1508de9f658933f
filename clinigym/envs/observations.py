"""What an observation holds besides the instruction and the step: the observation modes.

| mode | fields |
|---|---|
| ``screenshot`` (default) | ``screenshot`` |
| ``a11y`` | ``a11y`` (the tree as text, one line per element), ``a11y_json`` (the tree as JSON) |
| ``screenshot+a11y`` | both of the above |
| ``som`` | ``screenshot`` with numbered marks drawn on it, ``marks`` (JSON: number, role, name, box) |

Every mode but ``screenshot`` reads the program's accessibility tree, once per observation,
right after the screen settled and its screenshot was taken; boxes are in observation
pixels. Nothing in these fields comes from the scenario: the tree is the program's.
"""
from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from clinigym.core.elements import Tree
from clinigym.core.marks import draw_marks, marks_of, marks_to_json

__all__ = ["OBS_MODES", "AnyText", "ObsMode", "obs_mode"]

MAX_TREE_TEXT = 2_000_000    # characters: a capped tree (3000 elements) fits


@dataclass(frozen=True)
class ObsMode:
    name: str
    screenshot: bool    # the screenshot is given
    tree: bool          # the tree is given (text and JSON)
    marks: bool         # the screenshot carries marks, and their list is given

    @property
    def reads_tree(self) -> bool:
        return self.tree or self.marks

    def fields(self, rgb: np.ndarray, tree: Tree | None) -> dict[str, Any]:
        """The observation's fields of this mode, from the screenshot (observation pixels) and
        the tree read at the same moment (boxes in observation pixels), if it reads one."""
        out: dict[str, Any] = {}
        if self.reads_tree and tree is None:
            raise ValueError(f"observation mode {self.name!r} needs the program's tree")
        if self.marks:
            assert tree is not None
            marks = marks_of(tree)
            out["screenshot"] = draw_marks(rgb, marks)
            out["marks"] = marks_to_json(marks)
        elif self.screenshot:
            out["screenshot"] = rgb
        if self.tree:
            assert tree is not None
            out["a11y"] = tree.to_text()
            out["a11y_json"] = tree.to_json()
        return out

    def spaces(self, width: int, height: int) -> dict[str, spaces.Space]:
        text = AnyText(max_length=MAX_TREE_TEXT, min_length=0, charset=string.printable)
        out: dict[str, spaces.Space] = {}
        if self.screenshot:
            out["screenshot"] = spaces.Box(0, 255, (height, width, 3), np.uint8)
        if self.tree:
            out["a11y"] = text
            out["a11y_json"] = text
        if self.marks:
            out["marks"] = text
        return out


class AnyText(spaces.Text):
    """A text of any characters (a program's names may hold any), up to a length; samples
    are drawn from printable ASCII."""

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

OBS_MODES: dict[str, ObsMode] = {m.name: m for m in (
    ObsMode("screenshot", screenshot=True, tree=False, marks=False),
    ObsMode("a11y", screenshot=False, tree=True, marks=False),
    ObsMode("screenshot+a11y", screenshot=True, tree=True, marks=False),
    ObsMode("som", screenshot=True, tree=False, marks=True),
)}


def obs_mode(name: str) -> ObsMode:
    """The mode called `name`, or a ValueError naming the known ones."""
    try:
        return OBS_MODES[name]
    except KeyError:
        raise ValueError(f"unknown observation mode {name!r}; known: {', '.join(OBS_MODES)}") from None
