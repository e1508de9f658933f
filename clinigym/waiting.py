"""Bounded polling: every wait in clinigym is for a condition, never a fixed sleep."""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


class WaitTimeout(TimeoutError):
    pass


class Abort(Exception):
    """Raised by a predicate to stop waiting at once (the awaited thing cannot happen)."""


def poll(predicate: Callable[[], T], timeout: float, interval: float = 0.05) -> T | None:
    """Call `predicate` until it returns a truthy value or `timeout` seconds pass.
    Exceptions count as "not yet" (a server that is still starting)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except Abort:
            raise
        except Exception:  # noqa: BLE001 - a probe that fails is a probe that is not ready
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


def wait_for(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    value = poll(predicate, timeout, interval)
    if not value:
        raise WaitTimeout(f"timed out after {timeout:g}s waiting for {what}")
    return value
