"""This machine's processes as /proc tells them. Nothing is locked: a process may end
between two reads, and every reader then answers None or an empty value."""
from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import NamedTuple


class ProcStat(NamedTuple):
    state: str
    ppid: int
    pgid: int
    sid: int
    start: str     # clock ticks after boot: with the pid, it names one process (pids are reused)


def stat(pid: int) -> ProcStat | None:
    try:
        # The name in parentheses may hold spaces and parentheses: the fields follow the last ")".
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return ProcStat(fields[0], int(fields[1]), int(fields[2]), int(fields[3]), fields[19])


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def pids() -> list[int]:
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


# Blocking waits whose timeout is a register argument in milliseconds, by x86-64 syscall
# number: the argument's index. A main loop (GLib's, Qt's, openbox's) sleeps in one of them
# until its next timer or event; -1 is "no timer". Elsewhere the numbers differ: unread.
_MS_TIMEOUT = {7: 2, 232: 3, 281: 3} if platform.machine() == "x86_64" else None   # poll, epoll_(p)wait


def sleep_bound(syscall: str) -> float | None:
    """Seconds a thread (a line of /proc/PID/task/TID/syscall) sleeps at most, counted from
    when it went to sleep: 0 while it runs (or waits for a core), the timeout of a poll or
    epoll wait; None in a wait without a timer or in any other call. On a machine whose
    syscall numbers are not known here every thread counts as awake (0): no early end."""
    fields = syscall.split()
    if not fields or fields[0] in ("running", "-1") or _MS_TIMEOUT is None:
        return 0.0
    if len(fields) < 7 or not fields[0].isdigit() or int(fields[0]) not in _MS_TIMEOUT:
        return None
    ms = int(fields[1 + _MS_TIMEOUT[int(fields[0])]], 16) & 0xFFFFFFFF   # a C int
    return None if ms >= 1 << 31 else ms / 1000


def wakes_soon(pid: int, horizon: float) -> bool:
    """Whether a thread of `pid` runs, or sleeps in a wait that its timer ends within
    `horizon` seconds of going to sleep: a program that may draw again by itself."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tids:
        try:
            bound = sleep_bound(Path(f"/proc/{pid}/task/{tid}/syscall").read_text())
        except OSError:   # ended meanwhile
            continue
        if bound is not None and bound <= horizon:
            return True
    return False


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
