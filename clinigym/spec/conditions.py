"""Conditions on a live program: a window, a DOM element, a screen region, a REST answer,
a state file, an exited process.

Used for readiness of scenario set-up (`until`), the expected transition after each step
and the final state checks of a scenario. Each kind is one row of `KINDS`: its value's
type, its description and its own check. A condition file entry names exactly one kind
(`{window: ^Aeskulap$}`), plus `text` for the DOM kinds. Checks read the program through
a `Probe` (implemented by the backends).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import Field, create_model, model_validator

from clinigym.core.geometry import Box
from clinigym.core.screen import Frame, region_changed
from clinigym.spec.files import Spec


class Target(Spec):
    """Where a step's target is: a box in screen pixels or percent, or a DOM selector."""
    box: list[float] | None = Field(None, min_length=4, max_length=4, description="x1, y1, x2, y2 pixels")
    box_percent: list[float] | None = Field(None, min_length=4, max_length=4,
                                            description="x1, y1, x2, y2 percent of the screen")
    selector: str | None = Field(None, description="CSS selector, first visible match")
    text: str | None = Field(None, description="with selector: the element's text contains this")

    @model_validator(mode="after")
    def _one(self):
        given = [k for k in ("box", "box_percent", "selector") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of box, box_percent, selector")
        for key in ("box", "box_percent"):
            b = getattr(self, key)
            if b is not None and not (b[0] < b[2] and b[1] < b[3]):
                raise ValueError(f"{key} must be [x1, y1, x2, y2] with x1 < x2 and y1 < y2")
        if self.text is not None and self.selector is None:
            raise ValueError("text goes with selector")
        return self


class HttpCheck(Spec):
    url: str
    status: int = 200
    json_length: int | None = Field(None, description="the JSON answer is a list of this length")
    contains: str | None = None
    not_contains: str | None = None


class FileText(Spec):
    path: str = Field(description="glob, relative to the program's state folder")
    text: str = Field(min_length=1, description="one matching file contains this text")


class Probe(Protocol):
    """What a backend offers for checking conditions."""

    def resolve(self, target: Target) -> Box | None: ...
    def has_window(self, pattern: str) -> bool: ...
    def http_get(self, url: str) -> Any: ...
    def state_glob(self, pattern: str) -> list[str]: ...
    def exit_status(self, process: str) -> int | None: ...


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
    Kind("http", HttpCheck, "a loopback URL answers as described", _http),
    Kind("file_exists", str, "glob, relative to the program's state folder",
         lambda v, c, ctx: bool(ctx.probe.state_glob(v))),
    Kind("no_file", str, "glob that matches nothing in the state folder",
         lambda v, c, ctx: not ctx.probe.state_glob(v)),
    Kind("file_contains", FileText, "a state file holds a text (a changed preference)", _file_contains),
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


def holds(cond: Any, probe: Probe, before: Frame | None = None, after: Frame | None = None,
          min_changed: int = 40) -> bool:
    return KINDS[cond.kind].check(cond.value, cond, CheckContext(probe, before, after, min_changed))
