"""Set-of-marks: the interactive elements of a program's tree, numbered, and the screenshot
with those numbers drawn on it, as set-of-marks prompting (SoM) asks for.

A mark is one element the program exposes (`clinigym.core.elements`): its number, role,
name and box in observation pixels. Marks are taken from the tree only, never from a
scenario: which elements get one depends on their role and states alone. Numbers count
from 1 in the tree's walk order.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from clinigym.core.elements import Element, Tree
from clinigym.core.geometry import Box

__all__ = ["INTERACTIVE_ROLES", "INTERACTIVE_STATES", "ITEM_HOLDERS", "LAYOUT_ROLES", "Mark", "draw_marks",
           "interactive", "marks_from_json", "marks_of", "marks_text", "marks_to_json"]

# Roles a user acts on: AT-SPI's role names (desktop toolkits) and Chromium's ARIA roles.
INTERACTIVE_ROLES = frozenset({
    # AT-SPI
    "push button", "toggle button", "check box", "radio button", "menu item", "check menu item",
    "radio menu item", "menu", "combo box", "text", "entry", "password text", "spin button", "slider",
    "page tab", "list item", "table cell", "tree item", "link", "icon", "scroll bar", "split pane",
    # Chromium
    "button", "checkbox", "radio", "menuitem", "menuitemcheckbox", "menuitemradio", "combobox", "textbox",
    "searchbox", "spinbutton", "tab", "option", "gridcell", "cell", "row", "treeitem", "switch",
    "listitem", "columnheader",
})
# States that make any element interactive (a clickable canvas Chromium calls focusable)...
INTERACTIVE_STATES = frozenset({"focusable", "editable"})
# ...but for what only holds others: Java's panes and Chromium's page say they are focusable.
LAYOUT_ROLES = frozenset({
    "application", "frame", "window", "panel", "filler", "scroll pane", "viewport", "root pane", "layered pane",
    "glass pane", "document frame", "document web", "RootWebArea", "WebArea",
})
# A list without a box is not shown: Qt keeps a closed drop-down's items in the tree, each
# saying it is showing, at the screen's top-left corner.
ITEM_HOLDERS = frozenset({"list", "list box", "menu", "popup menu", "table", "tree", "tree table"})

_COLOUR = (255, 0, 110)      # outline and label background: rare in grey medical images
_TEXT = (255, 255, 255)
_FONT_SIZE = 14              # pixels: readable by a vision model at the observation's scale


@dataclass(frozen=True)
class Mark:
    number: int
    role: str
    name: str
    box: Box     # observation pixels

    def as_dict(self) -> dict[str, Any]:
        return {"mark": self.number, "role": self.role, "name": self.name,
                "box": [round(v, 1) for v in self.box.as_list()]}


def interactive(element: Element, ancestors: tuple[Element, ...] = ()) -> bool:
    """Whether a user acts on it: an interactive role, or an interactive state on an element
    that is not layout; and a box to act in, inside a shown list (`ancestors`: the element's,
    outermost first)."""
    return (element.box is not None and element.box.area > 0
            and (element.role in INTERACTIVE_ROLES
                 or (bool(element.states & INTERACTIVE_STATES) and element.role not in LAYOUT_ROLES))
            and not (ancestors and ancestors[-1].role in ITEM_HOLDERS and ancestors[-1].box is None))


def marks_of(tree: Tree) -> list[Mark]:
    """The marks of a tree whose boxes are in observation pixels (`Tree.to_obs`)."""
    out: list[Mark] = []
    for element, ancestors in tree.with_ancestors():
        if interactive(element, ancestors):
            assert element.box is not None
            out.append(Mark(len(out) + 1, element.role, element.name, element.box))
    return out


def marks_to_json(marks: list[Mark]) -> str:
    return json.dumps([m.as_dict() for m in marks], ensure_ascii=False)


def marks_from_json(text: str) -> list[Mark]:
    """The marks of an observation's ``marks`` field."""
    return [Mark(int(d["mark"]), str(d["role"]), str(d["name"]), Box(*d["box"])) for d in json.loads(text)]


def marks_text(marks: list[Mark]) -> str:
    """One line per mark, as a prompt gives them: ``[n] role "name" (x1,y1,x2,y2)``."""
    return "\n".join(f"[{m.number}] {m.role} {json.dumps(m.name, ensure_ascii=False)} "
                     "({},{},{},{})".format(*(int(round(v)) for v in m.box.as_list())) for m in marks)


def draw_marks(rgb: np.ndarray, marks: list[Mark]) -> np.ndarray:
    """A copy of `rgb` with each mark's box outlined and its number in a filled label at the
    box's top-left corner (inside the image)."""
    image = Image.fromarray(rgb)
    draw = ImageDraw.Draw(image)
    draw.fontmode = "1"          # no anti-aliasing: the digits are the label's only white pixels
    font = ImageFont.load_default(size=_FONT_SIZE)
    height, width = rgb.shape[:2]
    for m in marks:
        x1, y1, x2, y2 = (int(round(v)) for v in m.box.as_list())
        draw.rectangle([x1, y1, max(x1, x2 - 1), max(y1, y2 - 1)], outline=_COLOUR)
        label = str(m.number)
        left, top, right, bottom = draw.textbbox((0, 0), label, font=font)
        lw, lh = right - left + 4, bottom - top + 4
        lx, ly = min(max(x1, 0), width - lw), min(max(y1, 0), height - lh)
        draw.rectangle([lx, ly, lx + lw - 1, ly + lh - 1], fill=_COLOUR)
        draw.text((lx + 2 - left, ly + 2 - top), label, fill=_TEXT, font=font)
    return np.asarray(image).copy()
