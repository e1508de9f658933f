"""This machine's processes as /proc tells them. Nothing is locked: a process may end
between two reads, and every reader then answers None or an empty value."""
from __future__ import annotations

import os
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
