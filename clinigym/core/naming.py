"""Naming a target by meaning: for a target box on a screen, the program's own element that
is the target (or, inside an opaque widget, the named element it lies in and where), and a
selector that names exactly that element in the tree.

Used to propose `element` targets: for the clicks `clinigym collect` records, and to convert
a scenario's pixel boxes (`clinigym targets`). Pure: a tree and a box in, a `Naming` out.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clinigym.core.elements import Element, Selector, Tree
from clinigym.core.geometry import Box
from clinigym.core.marks import interactive

__all__ = ["MAX_GROWTH", "MIN_COVER", "Naming", "name_point", "name_target", "selector_data"]

MAX_GROWTH = 4.0     # an element up to this many times the box's area,
MIN_COVER = 0.4      # holding this much of the box and its centre, is the target
ROW_SHARE = 0.5      # a box holding this much of a table's row is that row
MIN_MENTIONED = 4    # characters: a shorter name with a digit is not trusted even when mentioned
_GLOB = re.compile(r"[*?\[]")
# A click anywhere in one of these does the same (a check box's label toggles it, as its box
# does). Not a page tab: GTK's holds its whole page.
ACTS_AS_ONE = frozenset({"push button", "toggle button", "check box", "radio button", "menu item",
                         "check menu item", "radio menu item", "link"})
CONTAINERS = frozenset({"application", "frame", "window", "filler", "panel", "scroll pane", "viewport",
                        "split pane", "layered pane", "root pane", "RootWebArea", "generic", "WebArea"})


@dataclass(frozen=True)
class Naming:
    """A proposal for one target: `selector` names `element` (alone in the tree); `part` is
    where the box lies inside the element's box (fractions), for an anchored target; or,
    without a selector, `reason` says why none is proposed."""
    selector: Selector | None = None
    element: Element | None = None
    part: tuple[float, float, float, float] | None = None
    reason: str = ""
    row: bool = False         # the target is the element's row, across its table

    def target_data(self) -> dict[str, Any] | None:
        """The scenario's `target` mapping, or None."""
        if self.selector is None:
            return None
        data: dict[str, Any] = {"element": selector_data(self.selector)}
        if self.part is not None:
            data["part"] = list(self.part)
        if self.row:
            data["row"] = True
        return data


def selector_data(selector: Selector) -> dict[str, Any]:
    """A selector as a scenario writes it (the inverse of `Selector.from_data`)."""
    data: dict[str, Any] = {}
    if selector.role is not None:
        data["role"] = selector.role
    if selector.name is not None:
        data["name"] = selector.name
    if selector.regex is not None:
        data["name"] = {"regex": selector.regex}
    if selector.within is not None:
        data["within"] = selector_data(selector.within)
    if selector.index is not None:
        data["index"] = selector.index
    return data


def name_target(tree: Tree, box: Box, mentioned: str = "") -> Naming:
    """The element that is the target `box` (screen pixels, as the tree's), named: among the
    elements holding the box's centre (in the active window, when one holds it), at most
    `MAX_GROWTH` times its area (any size for a button, check box, menu item or link: a
    click anywhere in it does the same) and covering `MIN_COVER` of it, the smallest named one,
    else the smallest unnamed one; else the smallest element holding the whole box that can
    be named (by its name, or by its role and place within a named ancestor), with the box
    as its `part`. Before all these, a target that is a row of a table (GTK's tables list
    their cells flat) is named by one of its cells, as its `row`.

    A name with a digit is used only when `mentioned` (the scenario's own text, its
    fixtures' names and ids) holds it: ages, times, counts and ports change from run to run."""
    stable = _Stable(mentioned)
    x, y = box.center
    on_top = _active_window(tree, x, y)
    holding = sorted(((e, up) for e, up in tree.with_ancestors() if e.box is not None and e.box.contains(x, y)
                      and e.role not in CONTAINERS and (on_top is None or e is on_top or on_top in up)),
                     key=lambda pair: pair[0].box.area if pair[0].box else 0.0)
    if not holding:
        return Naming(reason="no element the program shows holds the target's centre (an opaque widget "
                             "without an accessible element)")
    row = _name_row(tree, box, stable, on_top)
    if row is not None:
        return row
    # Not much larger (the judge would take clicks far from it) unless a click anywhere in it
    # does the same, and holding most of the box (not a cell of the row that is the target:
    # the judge would refuse the row's other cells).
    area = max(box.area, 1.0)
    fitting = [(e, up) for e, up in holding if e.box is not None
               and (e.box.area <= MAX_GROWTH * area or e.role in ACTS_AS_ONE)
               and _overlap(e.box, box) >= MIN_COVER * area]
    # A named element first: an unnamed one (a cell's inner part) is found only through its place.
    for element, ancestors in sorted(fitting, key=lambda pair: not pair[0].name):
        selector = _unique(tree, element, ancestors, stable)
        if selector is not None:
            return Naming(selector, element)
    for element, ancestors in holding:
        assert element.box is not None
        if _inside(box, element.box):
            selector = _unique(tree, element, ancestors, stable)
            # An anchor is a named element or placed in one: an index over the whole tree is not.
            if selector is not None and (selector.name or selector.regex or selector.within):
                return Naming(selector, element, _part(box, element.box))
    smallest = holding[0][0]
    return Naming(reason=f"the smallest element holding it ({smallest.role} {smallest.name!r}) is much larger "
                         f"than the target, and no named element holding the whole target is named uniquely")


def name_point(tree: Tree, point: tuple[float, float], max_area: float, mentioned: str = "") -> Naming:
    """The element a click at `point` acts on, named: the smallest interactive element
    holding it (`clinigym.core.marks.interactive`; in the active window, when one holds it)
    of at most `max_area` square pixels (a whole panel is not what a click is on) that can
    be named."""
    x, y = point
    on_top = _active_window(tree, x, y)
    stable = _Stable(mentioned)
    holding = [(e, up) for e, up in tree.with_ancestors() if e.box is not None and e.box.contains(x, y)
               and e.box.area <= max_area and interactive(e, up) and (on_top is None or on_top in up)]
    for element, ancestors in sorted(holding, key=lambda pair: pair[0].box.area if pair[0].box else 0.0):
        selector = _unique(tree, element, ancestors, stable)
        if selector is not None:
            return Naming(selector, element)
    return Naming(reason="no interactive element the program shows holds the point")


def _name_row(tree: Tree, box: Box, stable: _Stable, on_top: Element | None) -> Naming | None:
    """A row of a table or list that is the target, named by one of its cells: a name the
    scenario mentions (a PUID) before any other, and only a name that finds one cell."""
    area = max(box.area, 1.0)
    cells = []
    for element, ancestors in tree.with_ancestors():
        e = element.box
        if (e is None or not element.name or not box.y1 <= (e.y1 + e.y2) / 2 <= box.y2
                or not box.x1 <= (e.x1 + e.x2) / 2 <= box.x2 or (on_top is not None and on_top not in ancestors)):
            continue
        row = tree.row(element, ancestors)
        # the box is the row: it holds most of the row (not one cell of it), and the row most of it
        if row is not None and _overlap(row, box) >= max(MIN_COVER * area, ROW_SHARE * row.area):
            cells.append((element, ancestors))
    for element, ancestors in sorted(cells, key=lambda pair: not stable.said(pair[0].name)):
        selector = _unique(tree, element, ancestors, stable)
        if selector is not None and selector.name and selector.index is None:
            return Naming(selector, element, row=True)
    return None


def _active_window(tree: Tree, x: float, y: float) -> Element | None:
    """The active top-level window (AT-SPI's `active` state) when it holds the point: what
    is under a modal dialog is not what a click there reaches."""
    for root in tree.roots:
        for window in (root, *root.children):
            if "active" in window.states and window.box is not None and window.box.contains(x, y):
                return window
    return None


@dataclass(frozen=True)
class _Stable:
    mentioned: str

    def __call__(self, name: str) -> bool:
        # "1" or "12" is in any file; a fixture's id or name ("CG0005", "IMG0003") is not by chance.
        return not any(c.isdigit() for c in name) or self.said(name)

    def said(self, name: str) -> bool:
        """The scenario's text holds the name, as a word of at least `MIN_MENTIONED` characters."""
        return len(name) >= MIN_MENTIONED and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", self.mentioned) is not None


def _unique(tree: Tree, element: Element, ancestors: tuple[Element, ...],
            stable: _Stable) -> Selector | None:
    """The simplest selector that finds exactly `element`: role and name (when it has a
    name); then within one of its nearest named ancestors; then within the nearest, with an
    index among the matches. A name that changes from run to run is left out: such an
    element is found by its role and place within a named ancestor, or not at all."""
    if element.name and not stable(element.name):
        return _placed(tree, element, ancestors, stable)
    own = _selector(element)
    if element.name and _only(tree, own, element):   # an unnamed one always says where it is
        return own
    named = [a for a in reversed(ancestors) if a.name and stable(a.name) and a.role != "application"]
    for ancestor in named[:3]:
        candidate = _selector(element, within=_selector(ancestor))
        if _only(tree, candidate, element):
            return candidate
    base = _selector(element, within=_selector(named[0]) if named else None)
    found = tree.find(base)
    if element in found:
        return _selector(element, within=base.within, index=found.index(element))
    return None


def _placed(tree: Tree, element: Element, ancestors: tuple[Element, ...], stable: _Stable) -> Selector | None:
    """Role and place without the name: within the nearest stable named ancestor, with an
    index among the elements of its role there when there are several."""
    named = [a for a in reversed(ancestors) if a.name and stable(a.name) and a.role != "application"]
    if not named:
        return None
    base = Selector(role=element.role, within=_selector(named[0]))
    found = tree.find(base)
    if found == [element]:
        return base
    return Selector(role=element.role, within=base.within, index=found.index(element)) if element in found else None


def _selector(element: Element, within: Selector | None = None, index: int | None = None) -> Selector:
    """Role and exact name (a name holding glob characters as an anchored regex)."""
    if element.name and _GLOB.search(element.name):
        return Selector(role=element.role, regex=f"^{re.escape(element.name)}$", within=within, index=index)
    return Selector(role=element.role, name=element.name or None, within=within, index=index)


def _only(tree: Tree, selector: Selector, element: Element) -> bool:
    return tree.find(selector) == [element]


def _inside(inner: Box, outer: Box) -> bool:
    return outer.x1 <= inner.x1 and outer.y1 <= inner.y1 and inner.x2 <= outer.x2 and inner.y2 <= outer.y2


def _overlap(a: Box, b: Box) -> float:
    return max(0.0, min(a.x2, b.x2) - max(a.x1, b.x1)) * max(0.0, min(a.y2, b.y2) - max(a.y1, b.y1))


def _part(box: Box, within: Box) -> tuple[float, float, float, float]:
    w, h = within.x2 - within.x1, within.y2 - within.y1
    return (round((box.x1 - within.x1) / w, 4), round((box.y1 - within.y1) / h, 4),
            round((box.x2 - within.x1) / w, 4), round((box.y2 - within.y1) / h, 4))
