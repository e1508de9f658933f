"""What the X server reports drawn (its DAMAGE extension): a screen's changes without
grabbing the whole screen over and over.

The X server tells which area was drawn; only that area is grabbed and compared with
the last known screen, so a redraw with the same pixels (or a blinking caret under
`min_changed`) is no change. Xvfb has the extension; the local and the Docker backend
share one X server per display, so both see the same reports.
"""
from __future__ import annotations

import select
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from Xlib import display as xdisplay
from Xlib.error import ConnectionClosedError
from Xlib.ext import damage as xdamage

from clinigym.core.errors import ProgramDied, ProgramError
from clinigym.core.screen import Frame, changed_pixels
from clinigym.runtime.busy import SAMPLE_EVERY, BusyMeter, Hold

# A grab of one screen area: (x, y, width, height) -> uint32 pixels, as `Frame.raw`.
GrabArea = Callable[[int, int, int, int], np.ndarray]

# How long drawings are gathered after the first one before their area is grabbed: a
# browser repaints its whole window every frame of an animation or a page load, and one
# grab per frame cost as much as polling (Orthanc Explorer: 30 grabs of the whole screen a
# step). The change is timed at the last drawing gathered, so a step does not end later.
DRAW_BATCH = 0.1


class ServerClosed(ProgramDied):
    """The X server closed the watch's connection: it has died (or is dying)."""


class DamageUnavailable(ProgramError):
    """The X server has no DAMAGE extension (the polling rule is used instead)."""


@dataclass(frozen=True)
class Area:
    x1: int
    y1: int
    x2: int
    y2: int

    def union(self, other: Area | None) -> Area:
        if other is None:
            return self
        return Area(min(self.x1, other.x1), min(self.y1, other.y1), max(self.x2, other.x2), max(self.y2, other.y2))

    def clip(self, width: int, height: int) -> Area | None:
        a = Area(max(0, self.x1), max(0, self.y1), min(width, self.x2), min(height, self.y2))
        return a if a.x2 > a.x1 and a.y2 > a.y1 else None


class DamageWatch:
    """Its own X connection with one damage object on the root window: every drawing on
    the screen, in any window, is reported (no compositing manager runs)."""

    def __init__(self, display_name: str):
        self._x = xdisplay.Display(display_name)
        if not self._x.has_extension("DAMAGE"):
            self._x.close()
            raise DamageUnavailable(f"the X server of {display_name} has no DAMAGE extension")
        self._x.damage_query_version()   # the handshake the extension requires before use
        self._event = self._x.extension_event.DamageNotify
        self._root = self._x.screen().root
        self._damage = self._create()

    def _create(self) -> int:
        # Raw rectangles: every drawing is reported, whatever was reported before, so no
        # clearing is needed. (The levels that report only growth of the damaged region
        # went silent for good, now and then, on Xvfb under Chromium, as if a clear had
        # been lost.)
        damage = self._root.damage_create(xdamage.DamageReportRawRectangles)
        self._x.sync()
        return damage

    def renew(self) -> None:
        """A new damage object for the old one, which missed a change."""
        self._x.damage_destroy(self._damage)
        self._damage = self._create()
        self._drain(None)

    def _drain(self, area: Area | None) -> Area | None:
        while self._x.pending_events():
            event = self._x.next_event()
            if event.type == self._event:
                a = event.area
                area = Area(a.x, a.y, a.x + a.width, a.y + a.height).union(area)
        return area

    def wait(self, timeout: float) -> Area | None:
        """The area drawn since the last call, waiting up to `timeout` for a drawing;
        None when nothing was drawn."""
        try:
            area = self._drain(None)
            if area is None and timeout > 0:
                select.select([self._x.fileno()], [], [], timeout)
                area = self._drain(None)
        except ConnectionClosedError as exc:
            raise ServerClosed(f"the X server closed the connection: {exc}") from exc
        return area

    def close(self) -> None:
        try:
            self._x.close()
        except Exception:  # the server may be gone already; nothing is left to release
            pass


@dataclass
class ScreenTracker:
    """The last known screen, updated area by area from what the X server reports drawn."""
    watch: DamageWatch
    grab_area: GrabArea
    base: np.ndarray
    min_changed: int
    changes: list[tuple[float, int]] = field(default_factory=list)
    missed: int = 0   # times the whole screen showed a change no report had told of
    batch: float = DRAW_BATCH

    def _gather(self, timeout: float) -> tuple[Area, float] | None:
        """The area drawn within `batch` seconds of a first drawing (waited for up to
        `timeout`), and when the last of them was reported."""
        area = self.watch.wait(timeout)
        if area is None:
            return None
        drawn = time.monotonic()
        end = drawn + self.batch
        while (left := end - time.monotonic()) > 0:
            more = self.watch.wait(left)
            if more is not None:
                area, drawn = more.union(area), time.monotonic()
        return area, drawn

    def poll(self, timeout: float) -> float | None:
        """Wait up to `timeout` for a drawing; when it changed more than `min_changed`
        pixels of the last known screen (which then takes the new pixels), the time it
        was drawn, else None."""
        gathered = self._gather(timeout)
        if gathered is None:
            return None
        h, w = self.base.shape
        area = gathered[0].clip(w, h)
        if area is None:
            return None
        now = self.grab_area(area.x1, area.y1, area.x2 - area.x1, area.y2 - area.y1)
        old = self.base[area.y1:area.y2, area.x1:area.x2]
        n = changed_pixels(now, old)
        if n <= self.min_changed:
            return None
        old[...] = now
        self.changes.append((gathered[1], n))
        return gathered[1]

    def confirm(self, frame: Frame) -> bool:
        """Whether the whole screen is the last known one. When it is not, a report was
        missed: the screen is taken as changed now and the damage object is renewed."""
        if changed_pixels(frame.raw, self.base) <= self.min_changed:
            return True
        self.base = frame.raw.copy()
        self.missed += 1
        self.changes.append((frame.t, -1))
        self.watch.renew()
        return False


def settle_on_damage(tracker: ScreenTracker, grab: Callable[[], Frame], quiet: float,
                     timeout: float, busy: BusyMeter | None = None,
                     hold: Hold | None = None) -> tuple[Frame, bool]:
    """Settled when nothing drawn changed the screen for `quiet` seconds, or, with `busy`,
    for its shorter window while the program was idle, and `hold` (drawing still owed) does
    not hold it back; and the whole screen, grabbed once at the end, is the one the reports
    led to (damage is a shortcut, never trusted alone). Returns the frame and whether it
    settled before `timeout`."""
    start = last_change = time.monotonic()
    if busy is not None:
        busy.sample()
    while True:
        now = time.monotonic()
        still = now - last_change
        held = False
        if still >= quiet or (busy is not None and still >= busy.window and busy.idle()):
            settles = hold.settles() if hold is not None else True
            if settles is None:
                last_change = now
                continue
            if settles:
                frame = grab()
                if tracker.confirm(frame):
                    return frame, True
                last_change = frame.t
                continue
            held = True
        if now - start >= timeout:
            return grab(), False
        wait = SAMPLE_EVERY if held else min(quiet - still, timeout - (now - start))
        drawn = tracker.poll(min(wait, SAMPLE_EVERY) if busy is not None else wait)
        if busy is not None:
            busy.sample()
        if drawn is not None:
            last_change = drawn


def watch_changes(tracker: ScreenTracker, grab: Callable[[], Frame], duration: float,
                  tick: Callable[[], None] | None = None, every: float = 0.05) -> list[tuple[float, int]]:
    """Every change (time, pixels changed; -1 for one the reports missed, seen at the
    end) for `duration` seconds: what a program draws after an action, for measuring.
    `tick`, if given, is called at least every `every` seconds (to sample alongside)."""
    end = time.monotonic() + duration
    first = len(tracker.changes)
    while (left := end - time.monotonic()) > 0:
        tracker.poll(min(left, every) if tick else left)
        if tick:
            tick()
    tracker.confirm(grab())
    return tracker.changes[first:]
