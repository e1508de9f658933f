"""CPU seconds PostgreSQL's server processes spend on one database.

A program whose record lives in PostgreSQL (GNU Health) draws nothing while the database
works for it, and the server's processes are not the program's: without them, a pause in
which only the database works looks idle. A server process names its database in its
title (`postgres: [cluster: ]user database client state`, PostgreSQL's `update_process_title`).
"""
from __future__ import annotations

import re

from clinigym.runtime import procfs


class DatabaseCpu:
    """A counter: CPU seconds (user + system) the server processes of `database` have used,
    ended ones included, so that it never goes down when a connection closes."""

    def __init__(self, database: str):
        # The cluster part is there when `cluster_name` is set (Debian sets it: "15/main").
        self.title = re.compile(rf"postgres: (?:\S+: )?\S+ {re.escape(database)} ")
        self.serving: dict[int, float] = {}   # pid -> CPU seconds at the last read
        self.others: set[int] = set()         # pids seen that are not (a backend titles itself
        self.ended = 0.0                      # only after its login: re-read until then)

    def __call__(self) -> float:
        live = set(procfs.pids())
        self.others &= live
        for pid in list(self.serving):
            if pid not in live:
                self.ended += self.serving.pop(pid)
        for pid in live - self.others - self.serving.keys():
            st = procfs.stat(pid)
            if st is None or st.name != "postgres":
                self.others.add(pid)
            elif self.title.match(procfs.cmdline(pid)):
                self.serving[pid] = 0.0
        for pid in list(self.serving):
            st = procfs.stat(pid)
            if st is None or st.name != "postgres":   # ended between the reads, or reused
                self.ended += self.serving.pop(pid)
            else:
                self.serving[pid] = st.cpu
        return self.ended + sum(self.serving.values())
