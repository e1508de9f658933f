"""The old settle rule: grab the whole screen every 25 ms until nothing changed for the
quiet window. For an X server without DAMAGE, and the baseline `clinigym bench` measures
the damage rule against."""
from __future__ import annotations

import time
from collections.abc import Callable

from clinigym.core.screen import Frame, changed_pixels
from clinigym.runtime.busy import Hold


def settle_by_polling(grab: Callable[[], Frame], quiet: float, timeout: float, min_changed: int,
                      since: Frame | None, hold: Hold | None = None,
                      interval: float = 0.025) -> tuple[Frame, bool]:
    """The settled frame and whether it settled before `timeout` (`wait_settled`)."""
    start = time.monotonic()
    last = since or grab()
    last_change = start
    while True:
        frame = grab()
        if changed_pixels(frame.raw, last.raw) > min_changed:
            last_change = frame.t
            last = frame
        if frame.t - last_change >= quiet:
            settles = hold.settles() if hold is not None else True
            if settles:
                return frame, True
            if settles is None:
                last_change = frame.t
        if frame.t - start >= timeout:
            return frame, False
        time.sleep(interval)   # the polling rule's pace, not a wait for the program
