"""Conditions on a live program: a window, a DOM element, a screen region, a REST answer,
a state file, a database row, one of the program's records (as the safety audit reads
them), an exited process, a screen region equal to a recorded reference.

Used for readiness of scenario set-up (`until`), the expected transition after each step
and the final state checks of a scenario. Each kind is one row of `KINDS`: its value's
type, its description and its own check. A condition file entry names exactly one kind
(`{window: ^Aeskulap$}`), plus `text` for the DOM kinds. Checks read the program through
a `Probe` (implemented by the backends).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from PIL import Image
from pydantic import Field, PrivateAttr, ValidationInfo, create_model, field_validator, model_validator

from clinigym.core.audit import Item, same_patient
from clinigym.core.elements import Selector
from clinigym.core.geometry import Box
from clinigym.core.screen import DEFAULT_THRESHOLD, Frame, region_changed, similarity
from clinigym.spec.files import Spec


class Target(Spec):
    """Where a step's target is: an element of the program's accessibility tree named by
    role, name and ancestor (by meaning: any screen size, layout or fixture), a DOM selector,
    or, as the last resort, a box in screen pixels or percent."""
    element: dict[str, Any] | None = Field(
        None, description="the element: {role, name: text | glob | {regex: ...}, within: {...}, index}")
    part: list[float] | None = Field(
        None, min_length=4, max_length=4,
        description="with element: x1, y1, x2, y2 as fractions (0-1) of its box (a point in an opaque widget)")
    row: bool | None = Field(None, description="with element: the element's row, across the table or list holding "
                                         "it (a cell that names a row: a patient's PUID in a list)")
    box: list[float] | None = Field(None, min_length=4, max_length=4, description="x1, y1, x2, y2 pixels")
    box_percent: list[float] | None = Field(None, min_length=4, max_length=4,
                                            description="x1, y1, x2, y2 percent of the screen")
    selector: str | None = Field(None, description="CSS selector, first visible match")
    text: str | None = Field(None, description="with selector: the element's text contains this")
    _element: Selector | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _one(self):
        given = [k for k in ("element", "box", "box_percent", "selector") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of element, box, box_percent, selector")
        for key in ("box", "box_percent"):
            b = getattr(self, key)
            if b is not None and not (b[0] < b[2] and b[1] < b[3]):
                raise ValueError(f"{key} must be [x1, y1, x2, y2] with x1 < x2 and y1 < y2")
        if self.text is not None and self.selector is None:
            raise ValueError("text goes with selector")
        if self.part is not None:
            if self.element is None:
                raise ValueError("part goes with element")
            x1, y1, x2, y2 = self.part
            if not (0 <= x1 < x2 <= 1 and 0 <= y1 < y2 <= 1):
                raise ValueError("part must be [x1, y1, x2, y2], fractions of the element's box, "
                                 "with 0 <= x1 < x2 <= 1 and 0 <= y1 < y2 <= 1")
        if self.row and (self.element is None or self.part is not None):
            raise ValueError("row goes with element, without part")
        if self.element is not None:
            self._element = Selector.from_data(self.element, "element")
        return self

    @property
    def kind(self) -> str:
        """How it is found: element, selector (DOM), or box (pixels or percent)."""
        return "element" if self.element is not None else "selector" if self.selector is not None else "box"

    @property
    def named(self) -> Selector | None:
        """The element's selector, for a target by element."""
        return self._element

    def in_element(self, box: Box) -> Box:
        """The target's box inside its element's `box`: the whole box, or its `part`."""
        if self.part is None:
            return box
        x1, y1, x2, y2 = self.part
        w, h = box.x2 - box.x1, box.y2 - box.y1
        return Box(box.x1 + x1 * w, box.y1 + y1 * h, box.x1 + x2 * w, box.y1 + y2 * h)


class HttpCheck(Spec):
    url: str
    status: int = 200
    json_length: int | None = Field(None, description="the JSON answer is a list of this length")
    contains: str | None = None
    not_contains: str | None = None


class SqlCheck(Spec):
    """A query on the program's own database (its `database` URI) and what it must answer."""
    query: str = Field(min_length=1, description="SQL run read-only; ${VARIABLES} of the program allowed")
    equals: str | None = Field(None, description="the answer is one value, equal to this text")
    rows: int | None = Field(None, ge=0, description="the answer has this many rows")

    @model_validator(mode="after")
    def _one(self):
        if (self.equals is None) == (self.rows is None):
            raise ValueError("give exactly one of equals or rows")
        return self


class RecordCheck(Spec):
    """How many of the program's records (one set of its `records:`, read by the safety
    audit's own readers) match a key, a patient and values; a demonstration's checks are
    written this way (`clinigym.collect.derive`)."""
    set: str = Field(min_length=1, description="a record set of the program's `records:`")
    key: str | None = Field(None, description="the record's key")
    patient: str | None = Field(None, description="the record's patient, compared as the audit compares names")
    fields: dict[str, str] = Field({}, description="values the record holds")
    count: int = Field(ge=0, description="how many records match; 0: none (a deleted record)")

    def matches(self, key: str, item: Item) -> bool:
        return ((self.key is None or key == self.key)
                and (self.patient is None or (item.patient is not None and same_patient(item.patient, self.patient)))
                and all(item.fields.get(f) == v for f, v in self.fields.items()))


class FileText(Spec):
    path: str = Field(description="glob, relative to the program's state folder")
    text: str = Field(min_length=1, description="one matching file contains this text")


def _reference_path(reference: str, context: dict | None) -> Path:
    """A `screen` reference as a path: relative to the scenario file being loaded."""
    path = Path(reference)
    if path.is_absolute():
        return path
    if not context or context.get("path") is None:
        raise ValueError(f"{reference!r} is relative, but to no file (give an absolute path)")
    return Path(context["path"]).resolve().parent / path


class ScreenRef(Spec):
    """A region of the final screen that must look like a recorded reference image: for an
    effect only the screen shows (a flipped, windowed, zoomed image; a layout)."""
    box: list[int] = Field(min_length=4, max_length=4, description="x1, y1, x2, y2 screen pixels (end exclusive)")
    reference: str = Field(min_length=1, description="PNG of the box's pixels after the task, relative to the "
                                                     "scenario file (`clinigym reference` records it)")
    min_identical: float = Field(DEFAULT_THRESHOLD, gt=0, le=1,
                                 description="fraction of the box's pixels that must equal the reference's")
    _path: Path | None = PrivateAttr(None)

    @field_validator("box")
    @classmethod
    def _box(cls, v):
        if not (0 <= v[0] < v[2] and 0 <= v[1] < v[3]):
            raise ValueError(f"must be [x1, y1, x2, y2] with 0 <= x1 < x2 and 0 <= y1 < y2, not {v}")
        return v

    @field_validator("reference")
    @classmethod
    def _file(cls, v, info: ValidationInfo):
        path = _reference_path(v, info.context)
        if not path.is_file():
            if (info.context or {}).get("record_references"):
                return v   # `clinigym reference` is about to record it
            raise ValueError(f"no such file {path} (record it with `clinigym reference`)")
        box = info.data.get("box")
        with Image.open(path) as img:
            size = img.size
        if box is not None and size != (box[2] - box[0], box[3] - box[1]):
            raise ValueError(f"{path} is {size[0]}x{size[1]} pixels, the box {box[2] - box[0]}x{box[3] - box[1]}")
        return v

    @model_validator(mode="after")
    def _resolve(self, info: ValidationInfo):
        self._path = _reference_path(self.reference, info.context)
        return self

    @property
    def path(self) -> Path:
        """The reference file (resolved when the scenario was loaded)."""
        assert self._path is not None
        return self._path


def screen_region(frame: Frame, box: list[int]) -> np.ndarray:
    """The RGB pixels of a box of a screen (x1, y1, x2, y2; end exclusive)."""
    x1, y1, x2, y2 = box
    h, w = frame.bgra.shape[:2]
    if x2 > w or y2 > h:
        raise ValueError(f"the box {box} lies outside the {w}x{h} screen")
    return np.ascontiguousarray(frame.bgra[y1:y2, x1:x2, 2::-1])


@lru_cache(maxsize=32)
def _reference_rgb(path: str, mtime_ns: int) -> np.ndarray:
    # cached per file version: a check looks many times while it waits
    with Image.open(path) as img:
        return np.asarray(img.convert("RGB"), dtype=np.uint8)


def screen_identity(ref: ScreenRef, frame: Frame) -> float:
    """The fraction of the box's pixels that equal the reference's (`clinigym.core.screen.similarity`)."""
    stored = _reference_rgb(str(ref.path), ref.path.stat().st_mtime_ns)
    return similarity(screen_region(frame, ref.box), stored).identical


class Probe(Protocol):
    """What a backend offers for checking conditions."""

    def resolve(self, target: Target) -> Box | None: ...
    def has_window(self, pattern: str) -> bool: ...
    def http_get(self, url: str) -> Any: ...
    def state_glob(self, pattern: str) -> list[str]: ...
    def exit_status(self, process: str) -> int | None: ...
    def sql(self, query: str) -> list[list[str]]: ...
    def records(self, name: str) -> dict[str, Item]: ...


@dataclass(frozen=True)
class CheckContext:
    """What a check may look at: the program, and around an action the frames before and after."""
    probe: Probe
    before: Frame | None = None
    after: Frame | None = None
    min_changed: int = 40


Check = Callable[[Any, Any, CheckContext], bool]   # (value, condition, context)


@dataclass(frozen=True)
class Kind:
    name: str
    value: Any                 # the value's type, as pydantic validates it
    doc: str
    check: Check
    with_text: bool = False    # takes `text` (the element's text contains it)
    needs_frames: bool = False  # only meaningful around an action (not as a final check)


def _dom(visible: bool) -> Check:
    def check(value: str, cond: Any, ctx: CheckContext) -> bool:
        return (ctx.probe.resolve(Target(selector=value, text=cond.text)) is not None) == visible
    return check


def _changed(value: Target, cond: Any, ctx: CheckContext) -> bool:
    if ctx.before is None or ctx.after is None:
        raise ValueError("`changed` is only meaningful after an action")
    box = ctx.probe.resolve(value)
    return box is not None and region_changed(ctx.before, ctx.after, box, ctx.min_changed)


def _shown(value: Target, cond: Any, ctx: CheckContext) -> bool:
    return ctx.probe.resolve(value) is not None


def _http(check: HttpCheck, cond: Any, ctx: CheckContext) -> bool:
    resp = ctx.probe.http_get(check.url)
    if resp.status_code != check.status:
        return False
    if check.json_length is not None:
        try:
            answer = resp.json()
        except ValueError:   # not JSON (yet): the condition does not hold
            return False
        if not isinstance(answer, list) or len(answer) != check.json_length:
            return False
    if check.contains is not None and check.contains not in resp.text:
        return False
    return check.not_contains is None or check.not_contains not in resp.text


def _screen(value: ScreenRef, cond: Any, ctx: CheckContext) -> bool:
    if ctx.after is None:
        raise ValueError("`screen` compares the current screen with its reference: give the screen (after)")
    return screen_identity(value, ctx.after) >= value.min_identical


def _sql(check: SqlCheck, cond: Any, ctx: CheckContext) -> bool:
    rows = ctx.probe.sql(check.query)
    if check.rows is not None:
        return len(rows) == check.rows
    return len(rows) == 1 and len(rows[0]) == 1 and rows[0][0] == check.equals


def _record(check: RecordCheck, cond: Any, ctx: CheckContext) -> bool:
    return sum(check.matches(k, item) for k, item in ctx.probe.records(check.set).items()) == check.count


def _file_contains(value: FileText, cond: Any, ctx: CheckContext) -> bool:
    return any(value.text in Path(f).read_text(errors="replace")
               for f in ctx.probe.state_glob(value.path) if Path(f).is_file())


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("window", str, "a window whose title matches this regex exists",
         lambda v, c, ctx: ctx.probe.has_window(v)),
    Kind("no_window", str, "no window title matches this regex",
         lambda v, c, ctx: not ctx.probe.has_window(v)),
    Kind("dom_visible", str, "CSS selector with a visible match", _dom(True), with_text=True),
    Kind("dom_hidden", str, "CSS selector with no visible match", _dom(False), with_text=True),
    Kind("changed", Target, "this region differs from before the action", _changed, needs_frames=True),
    Kind("shown", Target, "an element of the program's accessibility tree is showing, named by role, name "
                          "and its `states` (a selected tab: {element: {role: page tab, name: ..., "
                          "states: [selected]}})", _shown),
    Kind("http", HttpCheck, "a loopback URL answers as described", _http),
    Kind("file_exists", str, "glob, relative to the program's state folder",
         lambda v, c, ctx: bool(ctx.probe.state_glob(v))),
    Kind("no_file", str, "glob that matches nothing in the state folder",
         lambda v, c, ctx: not ctx.probe.state_glob(v)),
    Kind("sql", SqlCheck, "a query on the program's database answers as described (a record "
                          "written, a field's value, a count)", _sql),
    Kind("record", RecordCheck, "how many of the program's records (a set of its `records:`) match a key, "
                                "a patient and values", _record),
    Kind("file_contains", FileText, "a state file holds a text (a changed preference)", _file_contains),
    Kind("screen", ScreenRef, "this region of the screen equals a recorded reference image (at least "
                              "min_identical of its pixels): an effect only the screen shows", _screen),
    Kind("exited", str, "this process of the program ended with status 0 (a task that quits the "
                        "program; only in a scenario's last step)",
         lambda v, c, ctx: ctx.probe.exit_status(v) == 0),
)}


class _Condition(Spec):
    text: str | None = Field(None, description="with dom_visible/dom_hidden: element text contains")

    @model_validator(mode="after")
    def _one(self):
        given = [k for k in KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(KINDS)}")
        if self.text is not None and not KINDS[given[0]].with_text:
            raise ValueError("text goes with " + " or ".join(k for k, v in KINDS.items() if v.with_text))
        if given[0] == "shown" and self.value.named is None:
            raise ValueError("shown names an element of the program's tree: {element: {role, name, states}}")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in KINDS if getattr(self, k) is not None)

    @property
    def value(self) -> Any:
        return getattr(self, self.kind)

    def describe(self) -> str:
        value = self.value
        if isinstance(value, Spec):
            value = value.model_dump(exclude_none=True)
        return f"{self.kind}: {value}" + (f" (text {self.text!r})" if self.text else "")


# One optional field per kind: the files' shape (`{kind: value}`) comes from the table.
Condition = create_model(
    "Condition", __base__=_Condition,
    **{k.name: (k.value | None, Field(None, description=k.doc)) for k in KINDS.values()})


def listify(v):
    """One condition may stand for a list of one (a pydantic `before` validator)."""
    return [v] if isinstance(v, dict) else v


def holds(cond: Any, probe: Probe, before: Frame | None = None, after: Frame | None = None,
          min_changed: int = 40) -> bool:
    return KINDS[cond.kind].check(cond.value, cond, CheckContext(probe, before, after, min_changed))
