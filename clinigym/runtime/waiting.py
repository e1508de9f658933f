"""Bounded polling: every wait in clinigym is for a condition, never a fixed sleep."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from clinigym.core.errors import Abort, ProgramError, WaitTimeout

T = TypeVar("T")
__all__ = ["Abort", "NOT_READY", "WaitTimeout", "attempt", "poll", "wait_for"]

# What a probe of a program that is still starting raises: a refused or reset connection
# (requests' errors are OSErrors), a browser page or display that is not there yet. A bug
# in the probe (TypeError, KeyError, ...) is none of these and is raised at once.
NOT_READY: tuple[type[BaseException], ...] = (OSError, ProgramError)


def poll(predicate: Callable[[], T], timeout: float, interval: float = 0.05) -> T | None:
    """Call `predicate` until it returns a truthy value or `timeout` seconds pass.
    `NOT_READY` errors count as "not yet"; `Abort` stops the wait and is raised."""
    deadline = time.monotonic() + timeout
    while True:
        value = attempt(predicate)
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


def attempt(predicate: Callable[[], T]) -> T | None:
    """One look: `predicate()`, or None when it raises a `NOT_READY` error; `Abort` is raised."""
    try:
        return predicate()
    except Abort:
        raise
    except NOT_READY:
        return None


def wait_for(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    value = poll(predicate, timeout, interval)
    if not value:
        raise WaitTimeout(f"timed out after {timeout:g}s waiting for {what}")
    return value
