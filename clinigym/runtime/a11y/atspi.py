"""The AT-SPI reader: desktop toolkits' accessibility trees (GTK 2/3, wxGTK, Qt 5, Java Swing
through the ATK wrapper), from the program's private AT-SPI bus (`bus.py`).

Two ways, chosen per program (its file's ``accessibility.walk``; measured in
docs/guides/accessibility.md):

- ``collection``, where the application's root has the Collection interface (atk-bridge:
  GTK, wx, Java): ``Collection.GetMatches`` with the states SHOWING and VISIBLE lists every
  showing element in one call, in the tree's order; one pipelined round then asks each for
  its role, states, name, description, parent and extents. The bridge answers it by
  visiting every element, hidden ones too: cheap in GTK, slow through the Java wrapper;
- ``levels``, and wherever there is no Collection (Qt 5): a walk level by level, pruned to
  showing elements: per level one pipelined round of states and children, then one of role,
  name, description and extents for the showing ones only (Qt keeps hundreds of hidden
  widgets in its tree).

Hidden elements are never read. Role numbers are named by a static table (AtspiRole), not
by one GetRoleName call per role. An element's name, description and parent come from one
``Properties.GetAll`` where the application's toolkit is one whose bridge answers it
(`GET_ALL_TOOLKITS`: half the time of three calls in GNU Health's forms), else from three
``Get``. Text and value widgets get their content in one more round.
"""
from __future__ import annotations

import time
from typing import Any

from clinigym.core.elements import Caps, Raw, Tree, assemble
from clinigym.core.geometry import Box
from clinigym.runtime.a11y.dbus import Call, Connection

__all__ = ["ROLES", "STATES", "AtspiReader"]

ROOT = "/org/a11y/atspi/accessible/root"
REGISTRY = "org.a11y.atspi.Registry"
ACC = "org.a11y.atspi.Accessible"
COLLECTION = "org.a11y.atspi.Collection"
COMPONENT = "org.a11y.atspi.Component"
APPLICATION = "org.a11y.atspi.Application"
# Toolkits whose bridge (atk-bridge) answers Properties.GetAll: GTK 3, GTK 2 and wx (GAIL),
# Java's ATK wrapper. Qt's leaves it unanswered (ITK-SNAP's vanished from the bus after one).
GET_ALL_TOOLKITS = frozenset({"gtk", "GAIL", "J2SE-access-bridge"})
SCREEN_COORDS = 0
SORT_CANONICAL = 1
MATCH_ALL = 1

# AtspiRole, by number: libatspi's atspi_role_get_name for 0-129 ("_" stands for a space).
ROLES = tuple(r.replace("_", " ") for r in (
    "invalid accelerator_label alert animation arrow calendar canvas check_box check_menu_item color_chooser "
    "column_header combo_box date_editor desktop_icon desktop_frame dial dialog directory_pane drawing_area "
    "file_chooser filler focus_traversable font_chooser frame glass_pane html_container icon image "
    "internal_frame label layered_pane list list_item menu menu_bar menu_item option_pane page_tab "
    "page_tab_list panel password_text popup_menu progress_bar push_button radio_button radio_menu_item "
    "root_pane row_header scroll_bar scroll_pane separator slider spin_button split_pane status_bar table "
    "table_cell table_column_header table_row_header tearoff_menu_item terminal text toggle_button tool_bar "
    "tool_tip tree tree_table unknown viewport window extended header footer paragraph ruler application "
    "autocomplete editbar embedded entry chart caption document_frame heading page section redundant_object "
    "form link input_method_window table_row tree_item document_spreadsheet document_presentation "
    "document_text document_web document_email comment list_box grouping image_map notification info_bar "
    "level_bar title_bar block_quote audio video definition article landmark log marquee math rating timer "
    "static math_fraction math_root subscript superscript description_list description_term "
    "description_value footnote content_deletion content_insertion mark suggestion push_button_menu"
).split())
# AtspiStateType, by bit.
STATES = (
    "invalid active armed busy checked collapsed defunct editable enabled expandable expanded focusable "
    "focused has_tooltip horizontal iconified modal multi_line multiselectable opaque pressed resizable "
    "selectable selected sensitive showing single_line stale transient vertical visible manages_descendants "
    "indeterminate required truncated animated invalid_entry supports_autocompletion selectable_text "
    "is_default visited checkable has_popup read_only").split()
SHOWING_VISIBLE = (1 << STATES.index("showing")) | (1 << STATES.index("visible"))
TEXT_ROLES = frozenset({"text", "entry", "terminal"})   # never "password text"
VALUE_ROLES = frozenset({"spin button", "slider", "scroll bar", "progress bar", "dial", "level bar"})

Ref = tuple[str, str]   # (bus name, object path)


def role_name(number: int) -> str:
    return ROLES[number] if 0 <= number < len(ROLES) else "unknown"


def states_of(bits: int) -> frozenset[str]:
    return frozenset(name for i, name in enumerate(STATES) if bits >> i & 1)


def _bits(reply: tuple[Any, ...] | None) -> int:
    if not reply:
        return 0
    low, high = reply[0][0], reply[0][1]
    return int(low) | int(high) << 32


def _prop(reply: tuple[Any, ...] | None) -> Any:
    """The value of a Properties.Get reply (a variant: (signature, value))."""
    return reply[0][1] if reply else None


def _texts(props: list[tuple[Any, ...] | None]) -> tuple[str, str, Any]:
    """Name, description and parent: from one GetAll reply, or from Get replies (the parent's
    only when asked for)."""
    if len(props) == 1:
        found = props[0][0] if props[0] else {}
        return (found.get("Name", ("s", ""))[1] or "", found.get("Description", ("s", ""))[1] or "",
                found["Parent"][1] if "Parent" in found else None)
    name, desc, *parent = props
    return _prop(name) or "", _prop(desc) or "", _prop(parent[0]) if parent else None


def _box(reply: tuple[Any, ...] | None) -> Box | None:
    if not reply:
        return None
    x, y, w, h = reply[0]
    # No size: no geometry (Java's frame answers -1, -1, 0, 0), not a place off the screen.
    return Box(x, y, x + w, y + h) if w > 0 and h > 0 else None


class AtspiReader:
    """Reads the trees of every application on one AT-SPI bus."""

    source = "atspi"

    def __init__(self, address: str, walk: str = "collection"):
        self.conn = Connection(address)
        self.walk = walk
        self._collection: dict[str, bool] = {}   # per application: whether GetMatches answers
        self._get_all: dict[str, bool] = {}      # per application: whether its toolkit answers GetAll

    def close(self) -> None:
        self.conn.close()

    def read(self, caps: Caps = Caps(), screen: tuple[int, int] | None = None) -> Tree:
        deadline = time.monotonic() + caps.seconds
        apps = [tuple(a) for a in self.conn.call(Call(REGISTRY, ROOT, ACC, "GetChildren"), caps.seconds)[0]]
        raws: list[Raw] = []
        hit: set[str] = set()
        for bus, path in apps:
            if time.monotonic() >= deadline:
                hit.add("time")
                break
            raws += self._app((bus, path), caps, deadline, hit)
        return assemble(raws, caps, screen, hit, self.source)

    def _text_calls(self, ref: Ref, parent: bool) -> list[Call]:
        """The calls for an element's name, description and (`parent`) parent; `_texts` reads
        their replies."""
        b, p = ref
        if self._get_all.get(b, False):   # an element of another application: asked one by one
            return [Call.props(b, p, ACC)]
        return [Call.prop(b, p, ACC, "Name"), Call.prop(b, p, ACC, "Description"),
                *([Call.prop(b, p, ACC, "Parent")] if parent else [])]

    def _app(self, app: Ref, caps: Caps, deadline: float, hit: set[str]) -> list[Raw]:
        bus = app[0]
        if bus not in self._get_all:
            [reply], _ = self.conn.many([Call.prop(bus, app[1], APPLICATION, "ToolkitName")], deadline)
            self._get_all[bus] = _prop(reply) in GET_ALL_TOOLKITS
        if self.walk == "collection" and self._collection.get(bus, True):
            raws = self._by_collection(app, caps, deadline, hit)
            if raws is not None:
                self._collection[bus] = True
                return raws
            self._collection[bus] = False
        return self._by_levels(app, caps, deadline, hit)

    # -- Collection.GetMatches: every showing element at once -----------------------------
    def _by_collection(self, app: Ref, caps: Caps, deadline: float, hit: set[str]) -> list[Raw] | None:
        bus, path = app
        rule = ([SHOWING_VISIBLE & 0xFFFFFFFF, SHOWING_VISIBLE >> 32], MATCH_ALL, {}, MATCH_ALL, [], MATCH_ALL,
                [], MATCH_ALL, False)
        [reply], late = self.conn.many([Call(bus, path, COLLECTION, "GetMatches", "(aiia{ss}iaiiasib)uib",
                                             (rule, SORT_CANONICAL, caps.count + 1, True))], deadline)
        if late:
            hit.add("time")
            return []
        if not reply or not reply[0]:   # no Collection (Qt), or a toolkit whose rule matched nothing
            return None
        refs: list[Ref] = [tuple(r) for r in reply[0]]
        if len(refs) > caps.count:
            hit.add("count")
            refs = refs[:caps.count]
        raws = self._details([app, *refs], app, deadline, hit)
        # A showing element's parent may not say it is showing (GTK 2's open menus): the
        # missing ancestors are asked for, a level per round, so that the tree keeps its shape.
        for _ in range(caps.depth):
            keys = {r.key for r in raws}
            missing = list(dict.fromkeys(r.parent for r in raws if r.parent is not None and r.parent not in keys))
            if not missing or "time" in hit:
                break
            raws += self._details(missing, app, deadline, hit)
        return self._values(raws, deadline, hit)

    def _details(self, refs: list[Ref], app: Ref, deadline: float, hit: set[str]) -> list[Raw]:
        """Role, states, extents, name, description and parent of each element, in one round."""
        calls = []
        for b, p in refs:
            calls += [Call(b, p, ACC, "GetRole"), Call(b, p, ACC, "GetState"),
                      Call(b, p, COMPONENT, "GetExtents", "u", (SCREEN_COORDS,)),
                      *self._text_calls((b, p), parent=True)]
        per = len(calls) // len(refs) if refs else 0
        res, late = self.conn.many(calls, deadline)
        if late:
            hit.add("time")
        raws = []
        for i, ref in enumerate(refs):
            role, state, ext, *texts = res[per * i: per * i + per]
            if role is None:   # gone meanwhile, or no reply in time
                continue
            name, desc, up = _texts(texts)
            raws.append(Raw(ref, None if ref == app or up is None else tuple(up), role_name(role[0]),
                            name, desc, states_of(_bits(state)), None, _box(ext)))
        return raws

    # -- level walk, pruned to showing: where there is no Collection ----------------------
    def _by_levels(self, app: Ref, caps: Caps, deadline: float, hit: set[str]) -> list[Raw]:
        raws: list[Raw] = []
        level: list[tuple[Ref, Ref | None]] = [(app, None)]
        depth = 0
        while level:
            res, late = self.conn.many([c for (b, p), _ in level
                                        for c in (Call(b, p, ACC, "GetState"), Call(b, p, ACC, "GetChildren"))],
                                       deadline)
            keep, below = [], []
            for i, (ref, parent) in enumerate(level):
                state, kids = res[2 * i], res[2 * i + 1]
                bits = _bits(state)
                if parent is not None and (state is None or bits & SHOWING_VISIBLE != SHOWING_VISIBLE):
                    continue
                if len(raws) + len(keep) >= caps.count:
                    hit.add("count")
                    break
                keep.append((ref, parent, bits))
                below += [(k, ref) for k in caps.children([tuple(k) for k in kids[0]] if kids else [], depth, hit)]
            calls = [c for (b, p), _, _ in keep
                     for c in (Call(b, p, ACC, "GetRole"), Call(b, p, COMPONENT, "GetExtents", "u", (SCREEN_COORDS,)),
                               *self._text_calls((b, p), parent=False))]
            per = len(calls) // len(keep) if keep else 0
            details, late2 = self.conn.many(calls, deadline)
            for i, (ref, parent, bits) in enumerate(keep):
                role, ext, *texts = details[per * i: per * i + per]
                if role is not None:
                    name, desc, _ = _texts(texts)
                    raws.append(Raw(ref, parent, role_name(role[0]), name, desc, states_of(bits), None, _box(ext)))
            if late or late2:
                hit.add("time")
                break
            level, depth = below, depth + 1
        return self._values(raws, deadline, hit)

    def _values(self, raws: list[Raw], deadline: float, hit: set[str]) -> list[Raw]:
        """The content of text widgets and the current value of value widgets, in one round."""
        wanted = [i for i, r in enumerate(raws) if r.role in TEXT_ROLES or r.role in VALUE_ROLES]
        if not wanted or "time" in hit:
            return raws
        calls = [Call(raws[i].key[0], raws[i].key[1], "org.a11y.atspi.Text", "GetText", "ii", (0, -1))
                 if raws[i].role in TEXT_ROLES else Call.prop(raws[i].key[0], raws[i].key[1], "org.a11y.atspi.Value",
                                                              "CurrentValue")
                 for i in wanted]
        res, late = self.conn.many(calls, deadline)
        if late:
            hit.add("time")
        out = list(raws)
        for i, reply in zip(wanted, res):
            if reply is None:
                continue
            value = reply[0] if raws[i].role in TEXT_ROLES else _prop(reply)
            out[i] = Raw(raws[i].key, raws[i].parent, raws[i].role, raws[i].name, raws[i].description,
                         raws[i].states, f"{value:g}" if isinstance(value, float) else str(value), raws[i].box)
        return out
