"""This machine's processes as /proc tells them. Nothing is locked: a process may end
between two reads, and every reader then answers None or an empty value."""
from __future__ import annotations

import os
import platform
import re
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

_TICK = os.sysconf("SC_CLK_TCK")   # the unit of /proc's CPU times


class ProcStat(NamedTuple):
    state: str
    ppid: int
    pgid: int
    sid: int
    start: str     # clock ticks after boot: with the pid, it names one process (pids are reused)
    name: str      # comm
    cpu: float     # seconds used so far, user + system


def stat(pid: int) -> ProcStat | None:
    try:
        # The name in parentheses may hold spaces and parentheses: the fields follow the last ")".
        head, tail = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)
    except (OSError, ValueError):
        return None
    f = tail.split()
    # utime and stime are fields 14 and 15 of stat(5): here 11 and 12, after pid and name.
    return ProcStat(f[0], int(f[1]), int(f[2]), int(f[3]), f[19], head.split("(", 1)[-1],
                    (int(f[11]) + int(f[12])) / _TICK)


def comm(pid: int | str) -> str:
    """The name of a process (or of a thread: "PID/task/TID")."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def cmdline(pid: int) -> str:
    """A process's command line, arguments joined by spaces (its title, if it set one)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def pids() -> list[int]:
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


# Blocking waits whose timeout is a register argument in milliseconds, by x86-64 syscall
# number: the argument's index. A main loop (GLib's, Qt's, openbox's) sleeps in one of them
# until its next timer or event; -1 is "no timer". Elsewhere the numbers differ: unread.
_X86_64 = platform.machine() == "x86_64"
_MS_TIMEOUT = {7: 2, 232: 3, 281: 3} if _X86_64 else None   # poll, epoll_(p)wait
# A futex wait's timeout is a timespec in the thread's memory (4th argument): relative for
# FUTEX_WAIT, absolute for FUTEX_WAIT_BITSET on the clock its flag names. A JVM's timed
# waits (Thread.sleep, a Swing timer, Object.wait) are these, through pthread_cond_timedwait.
_FUTEX = 202 if _X86_64 else None
_FUTEX_WAIT, _FUTEX_WAIT_BITSET, _FUTEX_CMD, _FUTEX_CLOCK_REALTIME = 0, 9, 0x7F, 0x100
_TIMESPEC = struct.Struct("qq")

# Reads `size` bytes at an address of the process's memory; None when it cannot.
ReadMemory = Callable[[int, int], bytes | None]


def sleep_bound(syscall: str, memory: ReadMemory | None = None) -> float | None:
    """Seconds a thread (a line of /proc/PID/task/TID/syscall) sleeps at most: 0 while it
    runs (or waits for a core), the timeout of a poll or epoll wait (counted from when it
    went to sleep) and, given its process's `memory`, the time left in a timed futex wait;
    None in a wait without a timer or in any other call. On a machine whose syscall
    numbers are not known here every thread counts as awake (0): no early end."""
    fields = syscall.split()
    if not fields or fields[0] in ("running", "-1") or _MS_TIMEOUT is None:
        return 0.0
    if len(fields) < 7 or not fields[0].isdigit():
        return None
    number = int(fields[0])
    if number == _FUTEX and memory is not None:
        return _futex_bound(fields, memory)
    if number not in _MS_TIMEOUT:
        return None
    ms = int(fields[1 + _MS_TIMEOUT[number]], 16) & 0xFFFFFFFF   # a C int
    return None if ms >= 1 << 31 else ms / 1000


def _timed_futex(fields: list[str]) -> tuple[int, int] | None:
    """(op, address of its timespec) of a syscall line that is a futex wait with a timer."""
    if _FUTEX is None or len(fields) < 7 or fields[0] != str(_FUTEX):
        return None
    op, timeout = int(fields[2], 16), int(fields[4], 16)
    if op & _FUTEX_CMD not in (_FUTEX_WAIT, _FUTEX_WAIT_BITSET) or timeout == 0:
        return None   # no timer, or a call that is not a wait
    return op, timeout


def _futex_bound(fields: list[str], memory: ReadMemory) -> float | None:
    if (timed := _timed_futex(fields)) is None:
        return None
    op, timeout = timed
    raw = memory(timeout, _TIMESPEC.size)
    if raw is None or len(raw) != _TIMESPEC.size:
        return 0.0    # unreadable: taken as awake, so the step waits its full window
    sec, nsec = _TIMESPEC.unpack(raw)
    seconds = sec + nsec / 1e9
    if op & _FUTEX_CMD == _FUTEX_WAIT:
        return seconds
    clock = time.CLOCK_REALTIME if op & _FUTEX_CLOCK_REALTIME else time.CLOCK_MONOTONIC
    return max(0.0, seconds - time.clock_gettime(clock))


def _memory_reader(mem) -> ReadMemory:
    def read(address: int, size: int) -> bytes | None:
        try:
            mem.seek(address)
            return mem.read(size)
        except (OSError, ValueError, OverflowError):
            return None
    return read


def next_wake(pid: int, futex: bool = False, ignore: re.Pattern | None = None) -> float | None:
    """Seconds until a thread of `pid` wakes by itself at the latest: 0 while one runs, else
    the shortest timer of their waits (a poll's timeout counts from when it went to sleep:
    the thread wakes no later); None when no thread has a timer, or `pid` is gone. With
    `futex`, timed futex waits count too; threads whose name matches `ignore` (a VM's
    housekeeping, a toolkit's own event loop) are left out."""
    st = stat(pid)
    if st is None or st.state == "Z":
        return None    # gone, or ended and not yet reaped (a zombie's thread reads as awake)
    try:
        tids = os.listdir(f"/proc/{pid}/task")
        mem = open(f"/proc/{pid}/mem", "rb", buffering=0) if futex else None
    except ProcessLookupError:
        return None    # ended meanwhile
    except OSError:
        return 0.0 if os.path.exists(f"/proc/{pid}") else None   # timers unreadable: taken as awake
    soonest = None
    try:
        memory = _memory_reader(mem) if mem else None
        for tid in tids:
            task = f"/proc/{pid}/task/{tid}"
            try:
                if ignore is not None and ignore.search(Path(f"{task}/comm").read_text().strip()):
                    continue
                bound = sleep_bound(Path(f"{task}/syscall").read_text(), memory)
            except OSError:   # ended meanwhile
                continue
            if bound is not None and (soonest is None or bound < soonest):
                soonest = bound
        return soonest
    finally:
        if mem:
            mem.close()


def threads(pid: int) -> dict[int, str]:
    """The threads of `pid`: tid -> name (comm); empty when it is gone."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return {}
    return {int(tid): name for tid in tids if (name := comm(f"{pid}/task/{tid}"))}


def futex_timeout(pid: int, tid: int) -> bytes | None:
    """The timeout (a raw timespec) of the timed futex wait a thread sleeps in, None when it
    runs or waits without a timer. A JVM computes a fresh deadline for every timed wait, so
    a different value means the thread woke and went back to sleep."""
    try:
        timed = _timed_futex(Path(f"/proc/{pid}/task/{tid}/syscall").read_text().split())
        if timed is None:
            return None
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            return _memory_reader(mem)(timed[1], _TIMESPEC.size)
    except (OSError, ValueError):
        return None


def tree(root: int) -> dict[int, str]:
    """Every process descending from `root` (itself included): pid -> start time."""
    parents = {pid: (st.ppid, st.start) for pid in pids() if (st := stat(pid))}
    found, frontier = {}, [root]
    while frontier:
        pid = frontier.pop()
        if pid in parents and pid not in found:
            found[pid] = parents[pid][1]
            frontier += [p for p, (ppid, _) in parents.items() if ppid == pid]
    return found
