"""This machine's processes read from /proc: fields after a name with parentheses and
spaces, a process tree, and processes that are gone."""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clinigym.runtime import procfs
from clinigym.runtime.waiting import wait_for


@pytest.fixture
def odd_sleeper(tmp_path):
    """A `sleep` whose name holds ") (" and spaces, the case /proc/PID/stat makes hard, with a child."""
    program = tmp_path / "a) (b c"
    shutil.copy("/bin/sleep", program)
    shell = subprocess.Popen(["/bin/sh", "-c", f"'{program}' 60 & wait"], start_new_session=True)
    # The child exists from its fork, still named `sh` until its exec: wait for the name.
    wait_for(lambda: any(procfs.comm(p) == "a) (b c" for p in procfs.tree(shell.pid)), 10, "the child sleeper")
    yield shell
    os.killpg(shell.pid, 9)
    shell.wait()


def test_stat_reads_the_fields_after_the_name(odd_sleeper):
    [child] = set(procfs.tree(odd_sleeper.pid)) - {odd_sleeper.pid}
    st = procfs.stat(child)
    assert procfs.comm(child) == "a) (b c" == st.name
    assert procfs.cmdline(child).endswith("a) (b c 60 ")
    assert (st.ppid, st.pgid, st.sid) == (odd_sleeper.pid, odd_sleeper.pid, odd_sleeper.pid)
    assert st.state in ("S", "R")
    assert procfs.tree(odd_sleeper.pid) == {odd_sleeper.pid: procfs.stat(odd_sleeper.pid).start,
                                            child: st.start}


def test_this_process():
    st = procfs.stat(os.getpid())
    assert (st.ppid, st.pgid, st.sid) == (os.getppid(), os.getpgid(0), os.getsid(0))
    assert st.state == "R" and int(st.start) > 0
    # CPU seconds: the kernel's count agrees with this process's own (to its clock tick).
    times = os.times()
    assert abs(procfs.stat(os.getpid()).cpu - (times.user + times.system)) <= 0.02
    assert os.getpid() in procfs.pids()


def test_a_process_that_is_gone():
    done = subprocess.Popen(["/bin/true"])
    done.wait()
    assert procfs.stat(done.pid) is None
    assert procfs.comm(done.pid) == "" == procfs.cmdline(done.pid)
    assert procfs.tree(done.pid) == {}


# Lines of /proc/PID/task/TID/syscall as the kernel writes them: number, six arguments, sp, pc.
POLL_800 = "7 0x55d0c3a0 0x3 0x320 0x0 0x0 0x0 0x7ffd2c1e8a40 0x7f3b1c2e5b6f"
POLL_FOREVER = "7 0x55d0c3a0 0x3 0xffffffff 0x0 0x0 0x0 0x7ffd2c1e8a40 0x7f3b1c2e5b6f"
EPOLL_600S = "232 0x3 0x7ffd2c1e8a40 0x100 0x927c0 0x0 0x0 0x7ffd2c1e8a40 0x7f3b1c2e5b6f"
READ = "0 0x3 0x7ffd2c1e8a40 0x1000 0x0 0x0 0x0 0x7ffd2c1e8a40 0x7f3b1c2e5b6f"


def test_sleep_bound_reads_the_timer_of_a_poll_or_epoll_wait():
    assert procfs.sleep_bound(POLL_800) == 0.8
    assert procfs.sleep_bound(POLL_FOREVER) is None                        # -1: no timer
    assert procfs.sleep_bound(POLL_FOREVER.replace("0xffffffff", "0xffffffffffffffff")) is None
    assert procfs.sleep_bound(EPOLL_600S) == 600.0
    assert procfs.sleep_bound(EPOLL_600S.replace("232 ", "281 ")) == 600.0   # epoll_pwait
    assert procfs.sleep_bound(READ) is None                                # another call
    assert procfs.sleep_bound("running") == 0.0
    assert procfs.sleep_bound("-1 0x7ffd2c1e8a40 0x7f3b1c2e5b6f") == 0.0   # between calls


# futex(uaddr, op, val, timeout, ...): FUTEX_WAIT (0) with a relative timespec, FUTEX_WAIT_BITSET
# (9, | 0x80 private) with an absolute one on CLOCK_MONOTONIC, or on CLOCK_REALTIME with 0x100.
def _futex(op: int, timeout: int) -> str:
    return f"202 0x7f3b1c0 {op:#x} 0x0 {timeout:#x} 0x0 0xffffffff 0x7ffd2c1e8a40 0x7f3b1c2e5b6f"


def _memory(values: dict[int, tuple[int, int]]):
    """A process's memory holding timespecs at the given addresses."""
    return lambda address, size: struct.pack("qq", *values[address]) if address in values else None


def test_sleep_bound_reads_a_timed_futex_wait_from_memory():
    now = time.clock_gettime(time.CLOCK_MONOTONIC)
    memory = _memory({0x1000: (0, 250_000_000), 0x2000: (int(now) + 3, 0), 0x3000: (int(now) - 5, 0)})
    assert procfs.sleep_bound(_futex(0x80, 0x1000), memory) == 0.25            # relative: 0.25 s
    left = procfs.sleep_bound(_futex(0x89, 0x2000), memory)                    # absolute, monotonic
    assert int(now) + 3 - time.clock_gettime(time.CLOCK_MONOTONIC) <= left <= int(now) + 3 - now
    assert procfs.sleep_bound(_futex(0x89, 0x3000), memory) == 0.0             # already due
    realtime = _memory({0x4000: (int(time.time()) + 100, 0)})
    assert 98 < procfs.sleep_bound(_futex(0x189, 0x4000), realtime) <= 100    # absolute, real time
    assert procfs.sleep_bound(_futex(0x80, 0x0), memory) is None               # no timeout: no timer
    assert procfs.sleep_bound(_futex(0x81, 0x1000), memory) is None            # FUTEX_WAKE: no wait
    assert procfs.sleep_bound(_futex(0x80, 0x9000), memory) == 0.0            # unreadable: awake
    assert procfs.sleep_bound(_futex(0x80, 0x1000)) is None                    # memory not read


def _poller(timeout_ms: int) -> subprocess.Popen:
    """A process whose only thread sleeps in poll() with the given timeout, over and over."""
    code = f"import select, sys\np = select.poll()\nprint(flush=True)\nwhile True: p.poll({timeout_ms})"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    proc.stdout.readline()
    return proc


@pytest.mark.parametrize("timeout_ms, wake", [(300, 0.3), (-1, None)])
def test_next_wake_of_a_sleeping_process(timeout_ms, wake):
    proc = _poller(timeout_ms)
    try:
        # Between its calls the thread runs for a moment: wait until it sleeps in one.
        wait_for(lambda: Path(f"/proc/{proc.pid}/syscall").read_text().startswith("7 "), 10, "poll()")
        assert procfs.next_wake(proc.pid) == wake
    finally:
        proc.kill()
        proc.wait()
    assert procfs.next_wake(proc.pid) is None                   # gone: it wakes no more


def _futex_sleeper(timeout: float) -> subprocess.Popen:
    """A process with a thread named 'timer' in timed lock waits (CPython's are futex waits
    on an absolute CLOCK_MONOTONIC time, as a JVM's), over and over; its main thread waits
    without a timer."""
    code = ("import threading, ctypes\n"
            "def run():\n"
            "    ctypes.CDLL(None).prctl(15, b'timer')\n"   # PR_SET_NAME: the thread's comm
            "    lock = threading.Lock(); lock.acquire()\n"
            f"    while True: lock.acquire(timeout={timeout})\n"
            "threading.Thread(target=run).start()\nprint(flush=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    proc.stdout.readline()
    return proc


@pytest.mark.parametrize("timeout, futex, ignore, seen", [
    (0.5, True, None, True), (0.5, False, None, False), (0.5, True, "^tim", False)])
def test_next_wake_of_a_timed_futex_wait(timeout, futex, ignore, seen):
    proc = _futex_sleeper(timeout)
    try:
        def asleep() -> bool:
            return all(Path(f"/proc/{proc.pid}/task/{t}/syscall").read_text().startswith("202 ")
                       for t in os.listdir(f"/proc/{proc.pid}/task"))
        wait_for(asleep, 10, "futex waits")
        wake = procfs.next_wake(proc.pid, futex, re.compile(ignore) if ignore else None)
        if seen:   # the time left of its current 0.5 s wait
            assert 0 <= wake <= timeout
        else:      # unread, or left out: no timer (the main thread waits without one)
            assert wake is None
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("futex", [False, True])
def test_a_zombie_never_wakes(futex):
    child = subprocess.Popen(["/bin/true"])
    try:
        wait_for(lambda: procfs.stat(child.pid).state == "Z", 10, "the child to end")
        assert procfs.next_wake(child.pid, futex) is None
    finally:
        child.wait()


def test_a_running_process_wakes_now():
    spinner = subprocess.Popen([sys.executable, "-c", "print(flush=True)\nwhile True: pass"],
                               stdout=subprocess.PIPE)
    spinner.stdout.readline()
    try:
        # It runs, or waits for a core on a busy machine ("-1"): either way, not asleep.
        assert procfs.next_wake(spinner.pid) == 0.0
    finally:
        spinner.kill()
        spinner.wait()
