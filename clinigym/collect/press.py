"""The pressed look of a click: the button is held down until the screen shows the element's
own feedback, which locates the element better than what the click changed afterwards."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from clinigym.collect import proposals as prop
from clinigym.core.screen import Frame, changed_pixels
from clinigym.runtime.busy import BusyMeter

if TYPE_CHECKING:
    from clinigym.runtime.backends.base import Backend

# The probe's bounds (seconds): at least PRESS_WAIT for a pressed look, longer while the
# program works on the CPU (idle for PRESS_IDLE ends it), never past PRESS_LONGEST.
PRESS_WAIT = 0.5
PRESS_IDLE = 0.2
PRESS_LONGEST = 3.0


def press_probe(backend: Backend, point, base: Frame) -> list[int] | None:
    """Press at `point`, wait for the pressed look, release; its box, or None."""
    d = backend.display
    d.move(*point)
    d.press()
    try:
        pressed = first_change(backend, base)
        if pressed is not None:
            pressed, _ = d.wait_settled(0.08, 0.5, 0, since=pressed)
    finally:
        d.release()
    if pressed is None:
        return None
    return prop.feedback_box(base.bgra, pressed.bgra, point, snap_frame=base.bgra)


def first_change(backend: Backend, base: Frame) -> Frame | None:
    """The first screen that differs from `base`; None once the program has shown nothing
    for PRESS_WAIT and sits idle on the CPU, or after PRESS_LONGEST. On a loaded machine
    a program still handling the press paints its pressed look after any fixed bound."""
    meter = BusyMeter(backend.work_seconds, PRESS_IDLE, backend.app.settle.idle_cpu)
    start = time.monotonic()
    while True:
        frame = backend.display.grab()
        if changed_pixels(frame.raw, base.raw) > 0:
            return frame
        meter.sample()
        waited = time.monotonic() - start
        if waited >= PRESS_LONGEST or (waited >= PRESS_WAIT and meter.idle()):
            return None
        time.sleep(0.01)   # the next look, not a wait for the program
