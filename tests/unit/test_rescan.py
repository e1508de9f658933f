"""A thread that rescans files on a timer: after a file changes, drawing is owed until the
thread has woken once (a real process with a named thread in timed futex waits)."""
from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

from clinigym.runtime import procfs
from clinigym.runtime.busy import Hold
from clinigym.runtime.rescan import Rescan
from clinigym.runtime.waiting import wait_for


@pytest.fixture
def scanner():
    """A process whose thread 'scanner' sleeps 0.4 s at a time in timed lock waits (futex
    waits on a fresh absolute deadline each time, as a JVM's Thread.sleep)."""
    code = ("import threading, ctypes\n"
            "def run():\n"
            "    ctypes.CDLL(None).prctl(15, b'scanner')\n"
            "    lock = threading.Lock(); lock.acquire()\n"
            "    while True: lock.acquire(timeout=0.4)\n"
            "threading.Thread(target=run).start()\nprint(flush=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    proc.stdout.readline()
    yield proc
    proc.kill()
    proc.wait()


def _tid(pid: int, name: str) -> int:
    return next(tid for tid, n in procfs.threads(pid).items() if n == name)


def test_a_timed_wait_shows_a_new_deadline_each_sleep(scanner):
    tid = wait_for(lambda: _tid(scanner.pid, "scanner") if "scanner" in procfs.threads(scanner.pid).values()
                   else None, 10, "the thread")
    first = wait_for(lambda: procfs.futex_timeout(scanner.pid, tid), 10, "a timed wait")
    assert len(first) == 16
    assert wait_for(lambda: (t := procfs.futex_timeout(scanner.pid, tid)) and t != first, 10, "the next sleep")
    main = scanner.pid   # the main thread waits for the other one without a timer
    assert procfs.futex_timeout(scanner.pid, main) is None


def test_drawing_is_owed_until_the_thread_woke_after_a_change(scanner, tmp_path):
    index = tmp_path / "index.dat"
    index.write_text("a")
    wait_for(lambda: "scanner" in procfs.threads(scanner.pid).values(), 10, "the thread")
    rescan = Rescan(re.compile("^scanner$"), [index], lambda: [scanner.pid])
    rescan.mark()
    assert rescan.pending() is False                  # nothing changed
    index.write_text("b")
    assert rescan.pending() is True                   # changed: the thread has not looked yet
    start = time.monotonic()
    wait_for(lambda: not rescan.pending(), 10, "the thread's next wake")
    assert time.monotonic() - start < 1.5             # one sleep of 0.4 s (plus the one it was in)
    assert rescan.pending() is False                  # seen: nothing owed any more


def test_no_such_thread_owes_nothing(scanner, tmp_path):
    index = tmp_path / "index.dat"
    rescan = Rescan(re.compile("^other$"), [index], lambda: [scanner.pid])
    rescan.mark()
    index.write_text("new")                           # created: changed
    assert rescan.pending() is False


def test_a_hold_restarts_the_windows_once_when_it_ends():
    owed = [True, True, False, False]
    hold = Hold(lambda: owed.pop(0))
    assert [hold.settles(), hold.settles(), hold.settles(), hold.settles()] == [False, False, None, True]
    assert Hold(lambda: False).settles() is True      # never held: settled at once
