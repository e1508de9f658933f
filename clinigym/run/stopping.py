"""Stopping a run on SIGINT or SIGTERM: the signal becomes an exception in the main thread,
so that every `finally` on the way up closes what it started."""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class RunStopped(KeyboardInterrupt):
    """A run was asked to stop. A KeyboardInterrupt (not an Exception), so that no
    `except Exception` on the way up takes it for an episode's failure."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


class StopGuard:
    """Turns the first stop signal into RunStopped; once `shield`ed (closing what was
    started, which is bounded by its own timeouts) signals are only remembered."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.shielded = False

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
        if not self.shielded:
            self.shielded = True
            raise RunStopped(signum)

    def shield(self) -> None:
        self.shielded = True

    def check(self) -> None:
        """Raise RunStopped when a signal came while shielded."""
        if self.signum is not None:
            raise RunStopped(self.signum)


@contextmanager
def stop_on(*signums: int) -> Iterator[StopGuard]:
    """Within: the signals stop the run (see StopGuard). Outside the main thread, where no
    handler can be installed, nothing changes."""
    guard = StopGuard()
    if threading.current_thread() is not threading.main_thread():
        yield guard
        return
    previous = {s: signal.signal(s, guard.handle) for s in signums}
    try:
        yield guard
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
