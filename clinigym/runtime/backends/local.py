"""The local backend: the program runs on this machine, on its own Xvfb display."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from clinigym.core.errors import SpecError
from clinigym.runtime.backends.base import Backend, ProgramDied, base_environment
from clinigym.runtime.display import DisplaySession, Geometry
from clinigym.spec.apps import AppSpec

__all__ = ["LocalBackend", "ProgramDied"]


class LocalBackend(Backend):
    kind = "local"

    def __init__(self, app: AppSpec, geometry: Geometry = Geometry()):
        host = host_release()
        if app.release != host:
            raise SpecError(app.folder / "app.yaml", "release",
                            f"{app.name} needs Debian {app.release} packages and this machine runs "
                               f"{host}: use the Docker backend (--backend docker)")
        super().__init__(app, geometry)
        self.procs: dict[str, subprocess.Popen] = {}

    def _ensure_display(self) -> DisplaySession:
        if self.display is None or not self.display.alive():
            if self.display is not None:
                self.display.close()
            self.display = DisplaySession(self.geometry)
        return self.display

    def _display_gone(self) -> str | None:
        return None if self.display is not None and self.display.alive() else "the X display is gone"

    def _base_env(self) -> dict[str, str]:
        return base_environment()

    def _spawn(self, name, argv, cwd, env, log: Path) -> None:
        with open(log, "ab") as out:
            self.procs[name] = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def _exit_statuses(self) -> dict[str, int | None]:
        return {name: proc.poll() for name, proc in self.procs.items()}

    def _kill(self, name: str | None, forget: bool) -> None:
        for proc_name, proc in list(self.procs.items()):
            if name not in (None, proc_name):
                continue
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait()
            if forget:
                del self.procs[proc_name]

    def _run(self, argv, cwd, env, timeout):
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        return done.returncode, done.stdout[-1000:] + done.stderr[-1000:]

    def process_groups(self) -> set[int]:
        """Process groups of the program and its display (each was started as a session leader)."""
        groups = {p.pid for p in self.procs.values() if p.poll() is None}
        return groups | (self.display.process_groups() if self.display else set())

    def memory_bytes(self) -> int:
        """Resident memory of the program and its display."""
        return rss_of_groups(self.process_groups())

    def cpu_seconds(self) -> float:
        """CPU time the program and its display have used (user + system, living processes)."""
        return cpu_of_groups(self.process_groups())

    def close_display(self) -> None:
        self.stop()
        if self.display:
            self.display.close()
            self.display = None


def _in_groups(pgids: set[int], read) -> list:
    """`read(pid)` for every process in the given process groups (gone ones left out)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.getpgid(int(entry)) in pgids:
                found.append(read(entry))
        except (OSError, ProcessLookupError):   # ended meanwhile
            continue
    return found


def _rss(pid: str) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


_TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: str) -> float:
    # Fields after the command (which may hold spaces): utime and stime are the 12th and 13th.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def rss_of_groups(pgids: set[int]) -> int:
    """Resident memory (bytes) of every process in the given process groups."""
    return sum(_in_groups(pgids, _rss))


def cpu_of_groups(pgids: set[int]) -> float:
    """CPU seconds (user + system) every living process in the given groups has used."""
    return sum(_in_groups(pgids, _cpu))


def host_release() -> str:
    """The Debian release of this machine (VERSION_CODENAME of os-release)."""
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            return line.split("=", 1)[1].strip('"')
    return "unknown"
