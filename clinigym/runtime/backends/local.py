"""The local backend: the program runs on this machine, on its own Xvfb display.

Every process it starts carries its owner's pid (`slots.OWNER_ENV`): `kill_owned` finds
what a killed run left running. The backend's process adopts the orphans of its programs
(a child subreaper) and reaps them, since PID 1 may not.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import time
from functools import partial
from pathlib import Path

from clinigym.core.errors import SpecError
from clinigym.runtime.backends.base import Backend, Health, ProgramDied, base_environment
from clinigym.runtime.display import DisplaySession, Geometry
from clinigym.runtime.procfs import comm, pids, stat
from clinigym.runtime.slots import DISPLAY_FOLDERS, OWNER_ENV, ROOT, note_close, pid_alive
from clinigym.runtime.waiting import poll
from clinigym.spec.apps import AppSpec

__all__ = ["LocalBackend", "ProgramDied", "die_with_parent", "kill_owned", "reap_adopted"]
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
# Folders of logs that the processes writing them own: a display's, a live view's (liveview.py).
LOG_FOLDERS = (DISPLAY_FOLDERS, "clinigym-view-")


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
        _prctl(PR_SET_CHILD_SUBREAPER, 1)   # the orphans of killed programs come to us to be reaped

    def _ensure_display(self) -> DisplaySession:
        if self.display is None or not self.display.alive():
            if self.display is not None:
                self.display.close()
            self.display = DisplaySession(self.geometry)
            # For a sweep after this process died; only what the backend sets, over the sweeper's
            # environment (this machine's, which may hold secrets, stays out of the file).
            note_close(self, {k: v for k, v in self._env({}).items() if os.environ.get(k) != v})
        return self.display

    def _base_env(self) -> dict[str, str]:
        return base_environment()

    def _spawn(self, name, argv, cwd, env, log: Path) -> None:
        with open(log, "ab") as out:
            self.procs[name] = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def _exit_statuses(self) -> dict[str, int | None]:
        return {name: proc.poll() for name, proc in self.procs.items()}

    def _health(self) -> Health:
        display = self.display is not None and self.display.alive()
        exits = self._exit_statuses()
        groups = {self.procs[name].pid: name for name, code in exits.items() if code is None}
        # Only the program's processes are read (a process group is a cheap syscall): a stat
        # of every process on the machine was a third of a step's CPU in a profile.
        stopped = {groups[st.pgid] for st in _in_groups(set(groups), lambda e: stat(int(e)))
                   if st and st.pgid in groups and st.state == "T"}
        return Health(None if display else "the X display is gone (Xvfb exited)", exits, sorted(stopped))

    def _kill(self, name: str | None, forget: bool) -> None:
        for proc_name, proc in list(self.procs.items()):
            if name not in (None, proc_name):
                continue
            # The whole group, also when its leader has exited already: a program that died with
            # its display leaves helpers that need no display (DICOMscope's DICOM receiver).
            if proc.poll() is None or not _ended(proc.pid):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait()
            poll(partial(_ended, proc.pid), timeout=5)
            if forget:
                del self.procs[proc_name]
        reap_adopted()

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

    def pids(self) -> list[int]:
        return _in_groups(self.process_groups(), int)

    def close_display(self) -> None:
        self.stop()
        if self.display:
            self.display.close()
            self.display = None
        reap_adopted()


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


def _cpu(pid: str) -> float:
    st = stat(int(pid))
    return st.cpu if st else 0.0   # ended meanwhile: it counts no more


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


# -- processes of this machine: reaping, and what killed runs left ---------------------------
def _ended(pgid: int) -> bool:
    """Whether no process of the group runs (a zombie does not)."""
    return not any((st := stat(pid)) and st.pgid == pgid and st.state != "Z" for pid in pids())


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}, {value})")


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Have the kernel send `sig` to this process when its parent ends (however it ends)."""
    _prctl(PR_SET_PDEATHSIG, sig)


def reap_adopted() -> None:
    """Reap the zombies this process adopted as a subreaper: processes of a program's
    session whose parent ended first. The sessions' leaders are this process's own children
    (each reaped by its Popen, which needs their exit status) and are left alone, as is
    anything in this process's own session."""
    me, own_session = os.getpid(), os.getsid(0)
    for pid in pids():
        st = stat(pid)
        if st and st.ppid == me and st.state == "Z" and pid != st.sid and st.sid != own_session:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _owner_of(pid: int) -> int | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:   # gone, or another user's
        return None
    mark = f"{OWNER_ENV}=".encode()
    for item in env.split(b"\0"):
        if item.startswith(mark):
            try:
                return int(item[len(mark):])
            except ValueError:
                return None
    return None


def _ancestors() -> set[int]:
    found, pid = set(), os.getpid()
    while pid > 1 and pid not in found:
        found.add(pid)
        st = stat(pid)
        pid = st.ppid if st else 0
    return found


def _display_folders(pids: list[int]) -> set[Path]:
    """The folders of logs (an X server's and window manager's, a live view's) the processes
    hold files in."""
    found = set()
    for pid in pids:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        for link in links:
            path = Path(link)
            if path.parent.parent == ROOT and path.parent.name.startswith(LOG_FOLDERS):
                found.add(path.parent)
    return found


def kill_owned(owners: set[int] | None = None, grace: float = 3.0) -> list[str]:
    """End every process marked as owned by `owners` (or, without `owners`, by a process that
    is gone), sparing this process and its ancestors: SIGTERM first (an X server then removes
    its lock), SIGKILL after `grace` seconds. The display folders they wrote logs to, and
    display folders nobody holds (left by a display killed before), are removed. Returns
    what was removed."""
    spared = _ancestors()
    marked = set()
    for pid in pids():
        owner = _owner_of(pid)
        if owner is None or owner == pid or pid in spared:
            continue
        if (owner in owners) if owners is not None else not pid_alive(owner):
            marked.add(pid)
    # With the sessions and groups the marked processes lead: Chromium's children write
    # over their environment (their process titles), so they carry no mark of their own.
    found = {pid: (comm(pid) or "?") for pid in pids() if pid not in spared and (
        pid in marked or ((st := stat(pid)) is not None and (st.sid in marked or st.pgid in marked)))}
    folders = _display_folders(list(found))

    def gone(group: list[int]) -> bool:
        for pid in group:
            try:
                os.waitpid(pid, os.WNOHANG)   # ours (adopted) or not: either way it must end
            except ChildProcessError:
                pass
        return all((st := stat(pid)) is None or st.state == "Z" for pid in group)

    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        left = [pid for pid in found if not gone([pid])]
        for pid in left:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        if poll(partial(gone, left), timeout=wait):
            break
    folders |= _unheld_display_folders()
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    return [f"process {pid} ({name})" for pid, name in sorted(found.items())] + sorted(map(str, folders))


def _unheld_display_folders(age: float = 30.0) -> set[Path]:
    """Display folders no process holds a file in, older than `age` seconds (a display that
    is being started holds its log a moment after its folder is made)."""
    old = set()
    for folder in (f for prefix in LOG_FOLDERS for f in ROOT.glob(f"{prefix}*")):
        try:
            if time.time() - folder.stat().st_mtime > age:
                old.add(folder)
        except OSError:   # removed meanwhile
            continue
    return old - _display_folders(pids()) if old else set()
