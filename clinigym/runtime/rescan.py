"""A program thread that rescans state files on a timer and draws what it finds.

DICOMscope's browser is one: a thread sleeps 2 s (`Thread.sleep(2000)` in a loop), then
checks whether the database index changed and, if so, redraws its tree and says 'New
Instances Arrived!'. Opening an image (its reviewed flag) or saving to the database writes
the index, so that redraw comes up to 2 s after the step that caused it, while the
program sleeps: no quiet window short enough to be useful outlasts it, and it lands in
whichever step is running then, a different one from run to run. After such a write the
screen is not settled until the thread has woken once.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from clinigym.runtime import procfs


def _stamp(path: Path) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


@dataclass
class Rescan:
    """`thread` names the rescanning thread (a regex on its name), `files` what it rescans;
    `pids` are the program's processes."""
    thread: re.Pattern
    files: list[Path]
    pids: Callable[[], list[int]]
    _seen: list[int | None] = field(default_factory=list)
    _sleep: bytes | None = None
    _where: tuple[int, int] | None = None   # (pid, tid) of the thread, once found

    def _find(self) -> tuple[int, int] | None:
        # Kept while the thread lives: a held step asks every 30 ms, and a JVM has dozens.
        if self._where is None or not self.thread.search(procfs.comm("{}/task/{}".format(*self._where))):
            self._where = next(((pid, tid) for pid in self.pids() for tid, name in procfs.threads(pid).items()
                                if self.thread.search(name)), None)
        return self._where

    def mark(self) -> None:
        """The files as they are now are known to the thread: nothing is pending."""
        self._seen = [_stamp(f) for f in self.files]
        self._sleep = None

    def pending(self) -> bool:
        """Whether a file changed since the thread last woke: until it wakes once more and
        sleeps again (on a new deadline), what it will draw is still to come."""
        if [_stamp(f) for f in self.files] == self._seen:
            return False
        found = self._find()
        if found is None:
            return False   # no such thread (the program is gone or not started): nothing to wait for
        sleep = procfs.futex_timeout(*found)
        if sleep is None:
            return True    # it runs: its rescan may be under way
        if self._sleep is None:
            self._sleep = sleep   # the sleep it is in now; the change is seen after it
            return True
        if sleep == self._sleep:
            return True
        self.mark()
        return False
