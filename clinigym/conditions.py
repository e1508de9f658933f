"""Conditions on a live program: a window, a DOM element, a screen region, a REST answer.

Used for readiness of scenario set-up, the expected transition after each
step and the final state check of a scenario. Specs here, checking in
`Probe` implementations (the backends).
"""
from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np
from pydantic import Field, model_validator

from clinigym.display import Frame
from clinigym.judge import Box
from clinigym.specfile import Spec


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


_KINDS = ("window", "no_window", "dom_visible", "dom_hidden", "changed", "http", "file_exists",
          "no_file", "file_contains", "exited")


class Condition(Spec):
    window: str | None = Field(None, description="a window whose title matches this regex exists")
    no_window: str | None = Field(None, description="no window title matches this regex")
    dom_visible: str | None = Field(None, description="CSS selector with a visible match")
    dom_hidden: str | None = Field(None, description="CSS selector with no visible match")
    text: str | None = Field(None, description="with dom_visible/dom_hidden: element text contains")
    changed: Target | None = Field(None, description="this region differs from before the action")
    http: HttpCheck | None = None
    file_exists: str | None = Field(None, description="glob, relative to the program's state folder")
    no_file: str | None = Field(None, description="glob that matches nothing in the state folder")
    file_contains: FileText | None = None
    exited: str | None = Field(None, description="this process of the program ended with status 0 "
                               "(a task that quits the program; only in a scenario's last step)")

    @model_validator(mode="after")
    def _one(self):
        given = [k for k in _KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(_KINDS)}")
        if self.text is not None and given[0] not in ("dom_visible", "dom_hidden"):
            raise ValueError("text goes with dom_visible or dom_hidden")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in _KINDS if getattr(self, k) is not None)

    def describe(self) -> str:
        value = getattr(self, self.kind)
        if isinstance(value, Spec):
            value = value.model_dump(exclude_none=True)
        return f"{self.kind}: {value}" + (f" (text {self.text!r})" if self.text else "")


class Probe(Protocol):
    """What a backend offers for checking conditions."""

    def resolve(self, target: Target) -> Box | None: ...
    def has_window(self, pattern: str) -> bool: ...
    def http_get(self, url: str): ...
    def state_glob(self, pattern: str) -> list: ...
    def exit_status(self, process: str) -> int | None: ...


def region_changed(before: Frame, after: Frame, box: Box, min_changed: int) -> bool:
    h, w = before.raw.shape
    x1, y1 = max(0, int(box.x1)), max(0, int(box.y1))
    x2, y2 = min(w, int(np.ceil(box.x2)) + 1), min(h, int(np.ceil(box.y2)) + 1)
    diff = before.raw[y1:y2, x1:x2] != after.raw[y1:y2, x1:x2]
    return int(np.count_nonzero(diff)) > min_changed


def holds(cond: Condition, probe: Probe, before: Frame | None = None, after: Frame | None = None,
          min_changed: int = 40) -> bool:
    kind = cond.kind
    if kind == "window":
        return probe.has_window(cond.window)
    if kind == "no_window":
        return not probe.has_window(cond.no_window)
    if kind in ("dom_visible", "dom_hidden"):
        box = probe.resolve(Target(selector=getattr(cond, kind), text=cond.text))
        return (box is not None) == (kind == "dom_visible")
    if kind == "changed":
        if before is None or after is None:
            raise ValueError("`changed` is only meaningful after an action")
        box = probe.resolve(cond.changed)
        return box is not None and region_changed(before, after, box, min_changed)
    if kind == "http":
        check = cond.http
        resp = probe.http_get(check.url)
        if resp.status_code != check.status:
            return False
        if check.json_length is not None and len(resp.json()) != check.json_length:
            return False
        if check.contains is not None and check.contains not in resp.text:
            return False
        return check.not_contains is None or check.not_contains not in resp.text
    if kind == "no_file":
        return not probe.state_glob(cond.no_file)
    if kind == "file_contains":
        return any(cond.file_contains.text in Path(f).read_text(errors="replace")
                   for f in probe.state_glob(cond.file_contains.path) if Path(f).is_file())
    if kind == "exited":
        return probe.exit_status(cond.exited) == 0
    return bool(probe.state_glob(cond.file_exists))
