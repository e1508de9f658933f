"""Whether a program is still working: its CPU counter over a sliding window.

A pause in drawing while the program computes (DICOMscope decoding an image, a
browser laying out a page) is not the end of a transition; a pause while every
process of the program sleeps is, unless a timer wakes it later (a program that
repaints on a timer needs a longer window, or `next_wake`: a look at whether the program
sleeps on a timer due soon, measured per program by `clinigym bench`).
"""
from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

# How often the counter is read while a screen settles: a few reads per window.
SAMPLE_EVERY = 0.03


@dataclass
class BusyMeter:
    """`counter` returns CPU seconds used so far; the program is idle when it used less
    than `max_rate` cores over the last `window` seconds and, with `next_wake` (seconds
    until its next timer at the latest, None for none), no timer of it is due within
    `horizon` seconds."""
    counter: Callable[[], float]
    window: float
    max_rate: float
    clock: Callable[[], float] = time.monotonic
    next_wake: Callable[[], float | None] | None = None
    horizon: float = math.inf
    samples: deque[tuple[float, float]] = field(default_factory=deque)

    def sample(self) -> None:
        now = self.clock()
        self.samples.append((now, self.counter()))
        # Keep one sample at or before the window's start: the rate spans the whole window.
        while len(self.samples) > 2 and self.samples[1][0] <= now - self.window:
            self.samples.popleft()

    def idle(self) -> bool:
        """Whether the samples cover the last `window` seconds and show less CPU than
        `max_rate` cores in them (too short a history is not idle), and no timer is due
        within the horizon."""
        if len(self.samples) < 2:
            return False
        (t0, c0), (t1, c1) = self.samples[0], self.samples[-1]
        if t0 > t1 - self.window or (c1 - c0) / (t1 - t0) >= self.max_rate:
            return False
        if self.next_wake is None:
            return True
        wake = self.next_wake()
        return wake is None or wake > self.horizon


@dataclass
class Hold:
    """Drawing the program still owes (`pending`, e.g. `Rescan.pending`): while it is pending
    the screen is not settled, whatever the windows say; once it is no longer, the windows
    start again, since what the program then draws comes after."""
    pending: Callable[[], bool]
    held: bool = False

    def settles(self) -> bool | None:
        """Asked when the screen looks settled: True when it is; False while the drawing is
        still owed; None once when it no longer is (start the windows again)."""
        if self.pending():
            self.held = True
            return False
        if self.held:
            self.held = False
            return None
        return True
