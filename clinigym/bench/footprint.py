"""What a `clinigym run` started, told by its process tree and recorded while it runs:
every process descending from it (pid and start time, since pids are reused), the display
locks, work folders and display folders of those processes, the containers they own; and
whether any of it is still there. Read by the soak and by the pool tests."""
from __future__ import annotations

import os
from pathlib import Path

from clinigym.runtime.procfs import comm, stat, tree
from clinigym.runtime.slots import OWNER_ENV, ROOT
from clinigym.runtime.waiting import poll


class Footprint:
    """What a run started, recorded while it runs, and whether any of it is still there."""

    def __init__(self, root: int, engine=None):
        self.root = root
        self.engine = engine            # a Docker client: containers are looked at too
        self.procs: dict[int, str] = {}
        self.locks: set[Path] = set()
        self.folders: set[Path] = set()
        self.containers: set[str] = set()

    def _owned_containers(self) -> list:
        from clinigym.runtime.backends.docker import LABEL
        if self.engine is None:
            return []
        return [c for c in self.engine.containers.list(all=True, filters={"label": LABEL})
                if int(c.labels.get(f"{LABEL}.owner", "0") or 0) in self.procs]

    def displays(self) -> int:
        """Its X servers that run: on this machine, or in its containers."""
        return sum(comm(p) == "Xvfb" for p in self.procs) + len(self.containers)

    def record(self) -> None:
        self.procs |= tree(self.root)
        self.containers |= {c.name for c in self._owned_containers()}
        for lock in Path("/tmp").glob(".X*-lock"):
            try:
                if int(lock.read_text().strip()) in self.procs:
                    self.locks.add(lock)
            except (OSError, ValueError):
                continue
        for folder in ROOT.glob("clinigym-*-*"):
            try:
                if int((folder / "owner").read_text()) in self.procs:
                    self.folders.add(folder)
            except (OSError, ValueError):
                pass
        for pid in self.procs:
            try:
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    path = Path(os.readlink(f"/proc/{pid}/fd/{fd}"))
                    if path.parent.name.startswith("clinigym-display-"):
                        self.folders.add(path.parent)
            except OSError:
                continue

    def names(self) -> set[str]:
        """The names of its processes that run."""
        return {comm(pid) for pid, start in self.procs.items() if (st := stat(pid)) and st.start == start} - {""}

    def gone_within(self, seconds: float) -> list[str]:
        """What is still there once it is all gone, or `seconds` have passed (a process that
        ends with its parent, as multiprocessing's resource tracker, takes a moment)."""
        wait = poll(lambda: not self.left(), max(seconds, 0.0), interval=0.1)
        return [] if wait else self.left()

    def left(self) -> list[str]:
        """What is still there: living processes (a zombie has ended), locks, folders,
        containers."""
        left = [f"process {pid} ({comm(pid)})" for pid, start in self.procs.items()
                if (st := stat(pid)) and st.start == start and st.state != "Z"]
        left += [f"container {c.name}" for c in self._owned_containers()]
        for lock in self.locks:
            try:
                if int(lock.read_text().strip()) in self.procs:
                    left.append(str(lock))
            except (OSError, ValueError):
                continue
        left += [str(f) for f in self.folders if f.exists() and (not (f / "owner").exists()
                                                                  or int((f / "owner").read_text()) in self.procs)]
        for pid in os.listdir("/proc"):
            try:
                env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(e.startswith(f"{OWNER_ENV}=".encode()) and int(e.split(b"=", 1)[1]) in self.procs
                   for e in env) and (st := stat(int(pid))) and st.state != "Z":
                left.append(f"process {pid} ({comm(int(pid))}, marked)")
        return left
