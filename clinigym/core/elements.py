"""The elements a program shows, as its accessibility tree gives them: one typed model for
every source (AT-SPI for desktop toolkits, Chromium's DevTools accessibility tree for web
programs; the readers are in `clinigym.runtime.a11y`).

An `Element` is what the program itself exposes: role, name, description, states, value,
its box, and a stable `path` (``frame[0]/panel[2]/push button[3]``: the role and index
among siblings of the same role, from the root), so that the same widget has the same path
from one read to the next. Nothing here is invented by clinigym: an element without a name
is named by its description (an icon-only button's tooltip) if it has one, else its name
stays empty. A `Tree` also says which of the read's caps (`Caps`) cut it short.

`Selector` names an element by role, name (exact, glob or regular expression), an optional
ancestor (`within`, itself a selector) and an index among the matches; semantic targets
build on it.
"""
from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from clinigym.core.geometry import Box, Coordinates

__all__ = ["CAP_ORDER", "ROW_HOLDERS", "Caps", "Element", "Raw", "Selector", "Tree", "assemble", "normalize_name"]

T = TypeVar("T")
CAP_ORDER = ("depth", "width", "count", "time")   # how `Tree.truncated` lists the caps hit
_GLOB = re.compile(r"[*?\[]")
# Roles whose cells line up in rows (GTK's tables give their cells flat, with no row element).
ROW_HOLDERS = frozenset({"table", "tree table", "tree", "list", "list box", "grid", "treegrid"})
_IMPLIED = frozenset({"showing", "visible"})   # every element a reader keeps is both: not repeated in text


def normalize_name(text: str | None) -> str:
    """A name as users read it: zero-width spaces (U+200B, which GNU Health puts into table
    cells) removed, runs of whitespace (NBSP included) made one space, ends stripped."""
    return " ".join((text or "").replace("\u200b", "").split())


@dataclass(frozen=True)
class Caps:
    """Bounds of one read. A program answers every call on its own main thread, so a read
    costs the program about as much CPU as it takes: bounded, and the bound reported."""
    depth: int = 40           # levels below a root
    width: int = 500          # children kept per element (ITK-SNAP's closed menus hold ~100)
    count: int = 3000         # elements per tree
    seconds: float = 1.0      # wall time of one read; replies after it are dropped

    def __post_init__(self) -> None:
        if min(self.depth, self.width, self.count) < 1 or self.seconds <= 0:
            raise ValueError(f"caps must be positive: {self}")

    def children(self, kids: list[T], depth: int, hits: set[str]) -> list[T]:
        """The children kept of an element at `depth`; the caps that cut them go into `hits`."""
        if kids and depth >= self.depth:
            hits.add("depth")
            return []
        if len(kids) > self.width:
            hits.add("width")
            return kids[:self.width]
        return kids


@dataclass(frozen=True)
class Element:
    role: str                                  # AT-SPI role name ("push button"), or ARIA role (web)
    name: str                                  # normalised (`normalize_name`); if empty, the description
    description: str = ""
    states: frozenset[str] = frozenset()
    value: str | None = None
    box: Box | None = None                     # screen pixels from a reader; `Tree.to_obs` maps them
    path: str = ""
    children: tuple[Element, ...] = ()

    def walk(self) -> Iterator[Element]:
        """This element and its descendants, depth first, in the program's order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def as_dict(self) -> dict[str, Any]:
        return {"role": self.role, "name": self.name, "description": self.description,
                "states": sorted(self.states), "value": self.value,
                "box": None if self.box is None else [round(v, 1) for v in self.box.as_list()],
                "path": self.path, "children": [c.as_dict() for c in self.children]}


@dataclass(frozen=True)
class Selector:
    """Names an element: `role` exactly; `name` exactly after normalisation, as a glob when
    it holds ``*``, ``?`` or ``[`` (`fnmatch`, case-sensitive), or `regex` (searched); `within`
    an ancestor (any level up); `index` the n-th match (0-based) in the program's order;
    `states` that the element holds (``selected``, ``checked``)."""
    role: str | None = None
    name: str | None = None
    regex: str | None = None
    within: Selector | None = None
    index: int | None = None
    states: tuple[str, ...] = ()
    _pattern: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.name is not None and self.regex is not None:
            raise ValueError("a selector gives `name` or `regex`, not both")
        if self.index is not None and self.index < 0:
            raise ValueError(f"selector index must be >= 0, not {self.index}")
        if self.role is None and self.name is None and self.regex is None and self.within is None:
            raise ValueError("an empty selector matches everything: give a role, a name or an ancestor")
        if self.regex is not None:
            try:
                object.__setattr__(self, "_pattern", re.compile(self.regex))
            except re.error as exc:
                raise ValueError(f"selector regex {self.regex!r}: {exc}") from None

    @classmethod
    def from_data(cls, data: dict[str, Any], where: str = "selector") -> Selector:
        """From a scenario's mapping: ``{role, name: str | {regex: str}, within: {...}, index, states}``."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: a mapping with role, name, within, index, states; got {data!r}")
        unknown = set(data) - {"role", "name", "within", "index", "states"}
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
                             "known: role, name, within, index, states")
        name, regex = data.get("name"), None
        if isinstance(name, dict):
            if set(name) != {"regex"} or not isinstance(name["regex"], str):
                raise ValueError(f"{where}.name: a string or {{regex: PATTERN}}; got {name!r}")
            regex, name = name["regex"], None
        elif name is not None and not isinstance(name, str):
            raise ValueError(f"{where}.name: a string or {{regex: PATTERN}}; got {name!r}")
        within = data.get("within")
        index = data.get("index")
        if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
            raise ValueError(f"{where}.index: an integer; got {index!r}")
        states = data.get("states", [])
        if not isinstance(states, list) or not all(isinstance(x, str) for x in states):
            raise ValueError(f"{where}.states: a list of state names; got {states!r}")
        try:
            return cls(role=data.get("role"), name=name, regex=regex, index=index, states=tuple(states),
                       within=None if within is None else cls.from_data(within, f"{where}.within"))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    def __str__(self) -> str:
        """As a scenario writes it: ``role 'menu item' name 'File' within (role 'menu bar')``."""
        parts = [f"{k} {v!r}" for k, v in (("role", self.role), ("name", self.name), ("regex", self.regex),
                                           ("index", self.index)) if v is not None]
        if self.states:
            parts.append(f"states {', '.join(self.states)}")
        if self.within is not None:
            parts.append(f"within ({self.within})")
        return " ".join(parts)

    def matches(self, element: Element) -> bool:
        """Role, name and states (`within` and `index` need the tree: `Tree.find`)."""
        if self.role is not None and element.role != self.role:
            return False
        if not element.states.issuperset(self.states):
            return False
        if self._pattern is not None:
            return self._pattern.search(element.name) is not None
        if self.name is None:
            return True
        wanted = normalize_name(self.name)
        if _GLOB.search(wanted):
            return fnmatch.fnmatchcase(element.name, wanted)
        return element.name == wanted


@dataclass(frozen=True)
class Tree:
    roots: tuple[Element, ...]
    truncated: str | None = None     # the caps hit ("count", "depth,time"), or None: complete
    source: str = ""                 # the reader: "atspi", "devtools"

    def walk(self) -> Iterator[Element]:
        for root in self.roots:
            yield from root.walk()

    def __len__(self) -> int:
        return sum(1 for _ in self.walk())

    def find(self, selector: Selector) -> list[Element]:
        """The elements the selector names, in the program's order (with `index`: that one)."""
        found = [e for e, ancestors in self.with_ancestors()
                 if selector.matches(e) and _within(selector.within, ancestors)]
        if selector.index is None:
            return found
        return found[selector.index:selector.index + 1]

    def with_ancestors(self) -> Iterator[tuple[Element, tuple[Element, ...]]]:
        """Every element with its ancestors (outermost first), in the program's order."""
        return _with_ancestors(self.roots, ())

    def row(self, element: Element, ancestors: tuple[Element, ...] | None = None) -> Box | None:
        """The row `element` (a cell) is in: its height across its nearest table, list or
        tree holding it; None when it is in none, or has no box. `ancestors`: the element's,
        when the caller walked to it (else a walk finds them)."""
        if ancestors is None:
            ancestors = next((up for e, up in self.with_ancestors() if e is element), None)
        if ancestors is None or element.box is None:
            return None
        holder = next((a.box for a in reversed(ancestors) if a.role in ROW_HOLDERS and a.box is not None), None)
        return None if holder is None else Box(holder.x1, element.box.y1, holder.x2, element.box.y2)

    def to_text(self) -> str:
        """One line per element, indented by depth:
        ``[n] role "name" (x1,y1,x2,y2) state,state``; n counts from 1 in walk order (showing
        and visible, which every element read is, are left out)."""
        lines = []
        for n, (e, ancestors) in enumerate(self.with_ancestors(), 1):
            parts = [f"{'  ' * len(ancestors)}[{n}] {e.role} {json.dumps(e.name, ensure_ascii=False)}"]
            if e.box is not None:
                parts.append("({},{},{},{})".format(*(int(round(v)) for v in e.box.as_list())))
            shown = sorted(e.states - _IMPLIED)
            if shown:
                parts.append(",".join(shown))
            if e.value:
                parts.append(f"value={json.dumps(e.value, ensure_ascii=False)}")
            if e.description:
                parts.append(f"description={json.dumps(e.description, ensure_ascii=False)}")
            lines.append(" ".join(parts))
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "truncated": self.truncated, "roots": [r.as_dict() for r in self.roots]}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), ensure_ascii=False)

    def to_obs(self, coords: Coordinates) -> Tree:
        """The same tree with boxes in observation pixels (readers give screen pixels)."""
        def scaled(e: Element) -> Element:
            return replace(e, box=None if e.box is None else coords.box_to_obs(e.box),
                           children=tuple(scaled(c) for c in e.children))
        return replace(self, roots=tuple(scaled(r) for r in self.roots))


def _with_ancestors(elements: Iterable[Element], ancestors: tuple[Element, ...]
                    ) -> Iterator[tuple[Element, tuple[Element, ...]]]:
    for e in elements:
        yield e, ancestors
        yield from _with_ancestors(e.children, (*ancestors, e))


def _within(selector: Selector | None, ancestors: tuple[Element, ...]) -> bool:
    if selector is None:
        return True
    for i in range(len(ancestors) - 1, -1, -1):
        if selector.matches(ancestors[i]) and _within(selector.within, ancestors[:i]):
            return True
    return False


@dataclass(frozen=True)
class Raw:
    """One element as a reader got it, before the tree is built: `key` identifies it within
    the read, `parent` is its parent's key (None: a root). Readers list siblings in the
    program's order."""
    key: Hashable
    parent: Hashable | None
    role: str
    name: str = ""
    description: str = ""
    states: frozenset[str] = frozenset()
    value: str | None = None
    box: Box | None = None


def assemble(raws: Iterable[Raw], caps: Caps = Caps(), screen: tuple[int, int] | None = None,
             hit: Iterable[str] = (), source: str = "") -> Tree:
    """Build the tree from a reader's flat list, under `caps` (`hit`: caps the reader already
    hit). A box off the `screen` (width, height) drops the element and its subtree (closed
    GTK 2 menus sit at -2**31); an element without a box is kept only as a container of kept
    ones. A node whose parent is not in the list is a root."""
    hits = set(hit)
    raws = list(raws)
    known = {raw.key for raw in raws}
    children: dict[Hashable | None, list[Raw]] = {}
    for raw in raws:
        children.setdefault(raw.parent if raw.parent in known else None, []).append(raw)
    count = 0

    def build(raw: Raw, prefix: str, depth: int) -> Element | None:
        nonlocal count
        if raw.box is not None and screen is not None and not _on_screen(raw.box, screen):
            return None
        if count >= caps.count:
            hits.add("count")
            return None
        count += 1
        built = _siblings(caps.children(children.get(raw.key, []), depth, hits), prefix, depth + 1, build)
        if (raw.box is None or raw.box.area == 0) and not built and raw.parent is not None:
            count -= 1
            return None
        description = normalize_name(raw.description)
        return Element(raw.role, normalize_name(raw.name) or description, description, raw.states,
                       raw.value, raw.box, prefix, built)

    roots = _siblings(children.get(None, []), "", 0, build)
    return Tree(roots, ",".join(c for c in CAP_ORDER if c in hits) or None, source)


def _siblings(raws: list[Raw], parent_path: str, depth: int,
              build: Callable[[Raw, str, int], Element | None]) -> tuple[Element, ...]:
    seen: dict[str, int] = {}
    out = []
    for raw in raws:
        index = seen.get(raw.role, 0)
        path = f"{parent_path}/{raw.role}[{index}]" if parent_path else f"{raw.role}[{index}]"
        element = build(raw, path, depth)
        if element is not None:
            seen[raw.role] = index + 1
            out.append(element)
    return tuple(out)


def _on_screen(box: Box, screen: tuple[int, int]) -> bool:
    return box.x2 > 0 and box.y2 > 0 and box.x1 < screen[0] and box.y1 < screen[1]
