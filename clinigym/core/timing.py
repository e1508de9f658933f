"""Per-phase timings, as `info["timings"]` reports them: seconds per named phase."""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Timings:
    def __init__(self) -> None:
        self._start = time.monotonic()
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - t

    def done(self) -> dict[str, float]:
        """The phases and the total since the start."""
        return {**self.seconds, "total": time.monotonic() - self._start}
