"""Whether a program is still working: its CPU counter over a sliding window.

A pause in drawing while the program computes (DICOMscope decoding an image, a
browser laying out a page) is not the end of a transition; a pause while every
process of the program sleeps is, unless a timer wakes it later (a program that
repaints on a timer needs a longer window, or `waiting`: a look at whether the program
sleeps on a timer due soon, measured per program by `clinigym bench`).
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

# How often the counter is read while a screen settles: a few reads per window.
SAMPLE_EVERY = 0.03


@dataclass
class BusyMeter:
    """`counter` returns CPU seconds used so far; the program is idle when it used less
    than `max_rate` cores over the last `window` seconds and, with `waiting`, when that
    returns False (no timer of the program is about to wake it)."""
    counter: Callable[[], float]
    window: float
    max_rate: float
    clock: Callable[[], float] = time.monotonic
    waiting: Callable[[], bool] | None = None
    samples: deque[tuple[float, float]] = field(default_factory=deque)

    def sample(self) -> None:
        now = self.clock()
        self.samples.append((now, self.counter()))
        # Keep one sample at or before the window's start: the rate spans the whole window.
        while len(self.samples) > 2 and self.samples[1][0] <= now - self.window:
            self.samples.popleft()

    def idle(self) -> bool:
        """Whether the samples cover the last `window` seconds and show less CPU than
        `max_rate` cores in them (too short a history is not idle)."""
        if len(self.samples) < 2:
            return False
        (t0, c0), (t1, c1) = self.samples[0], self.samples[-1]
        if t0 > t1 - self.window or (c1 - c0) / (t1 - t0) >= self.max_rate:
            return False
        return self.waiting is None or not self.waiting()
