"""Nothing left behind (#40): what a process that owned programs started ends with it, however
it ends (an exception, SIGKILL, SIGTERM to a command), without `clinigym cleanup`; and
`cleanup` after a SIGKILL that no guardian could follow removes everything, databases included.

Each case runs a real script or command in a subprocess and watches, while it works, the
processes of its tree and what they own (processes marked with an owner's pid, the folders
they hold, the work folders those owners claimed, their containers, display locks,
GNU Health's databases of their slots); then ends it and waits, bounded, for all of it to go.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from clinigym.runtime.procfs import comm, pids, stat
from clinigym.runtime.slots import OWNER_ENV, ROOT, slot_ports
from clinigym.spec.apps import load_app

PY = sys.executable
CLINIGYM = [PY, "-m", "clinigym.cli"]
GONE_WITHIN = 20.0   # seconds: a sweep kills with a 3 s grace, closes databases, removes containers

SCRIPT = """
import os, sys
import gymnasium as gym
import clinigym
env = gym.make("clinigym/orthanc-open-patient-study-v0", backend=sys.argv[1])
env.reset(seed=0)
print("reset", flush=True)
if sys.argv[2] == "raise":
    raise RuntimeError("a user's script fails before env.close()")
sys.stdin.read()   # until killed
"""


def _environ_owner(pid: int) -> int | None:
    try:
        items = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    mark = f"{OWNER_ENV}=".encode()
    for item in items:
        if item.startswith(mark) and item[len(mark):].isdigit():
            return int(item[len(mark):])
    return None


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid in pids():
        st = stat(pid)
        if st:
            children.setdefault(st.ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


def _held_folders(pid: int) -> set[Path]:
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return set()
    held = set()
    for link in links:
        path = Path(link)
        for parent in path.parents:
            if parent.parent == ROOT and parent.name.startswith("clinigym-"):
                held.add(parent)
    return held


def _gnuhealth_databases(ports: set[int]) -> list[str]:
    done = subprocess.run(["psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-U", "clinigym", "-d", "postgres", "-c",
                           "SELECT datname FROM pg_database"], capture_output=True, text=True,
                          env={**os.environ, "PGPASSWORD": "clinigym"}, check=True)
    return [d for d in done.stdout.split() if any(d == f"gnuhealth_{p}" or d.startswith(f"gnuhealth_{p}_")
                                                  for p in ports)]


def _containers(owners: set[int]) -> list[str]:
    done = subprocess.run(["docker", "ps", "-a", "--filter", "label=org.clinigym", "--format",
                           '{{.Names}} {{.Label "org.clinigym.owner"}}'], capture_output=True, text=True)
    return [line.split()[0] for line in done.stdout.splitlines()
            if len(line.split()) == 2 and int(line.split()[1]) in owners]


@dataclass
class Watch:
    """What the process tree of `root` owns, as seen while it works."""
    root: int
    owners: set[int] = field(default_factory=set)
    procs: dict[int, str] = field(default_factory=dict)
    folders: set[Path] = field(default_factory=set)
    gnuhealth_ports: set[int] = field(default_factory=set)

    def look(self) -> None:
        tree = _descendants(self.root)
        # Not this test process: its children inherit its mark when it owns programs itself.
        self.owners |= {o for pid in tree if (o := _environ_owner(pid)) not in (None, os.getpid())} | {self.root}
        for pid in pids():
            if _environ_owner(pid) in self.owners:
                self.procs[pid] = comm(pid) or "?"
                self.folders |= _held_folders(pid)
        for folder in ROOT.glob("clinigym-*"):
            try:
                owner = int((folder / "owner").read_text())
            except (OSError, ValueError):
                continue
            if owner in self.owners:
                self.folders.add(folder)
                if folder.name.startswith("clinigym-gnuhealth-"):
                    self.gnuhealth_ports.add(slot_ports(6, int(folder.name.rsplit("-", 1)[1]), ["tryton"])["tryton"])

    def until(self, what, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not what():
            assert time.monotonic() < deadline, f"not within {timeout:g}s: {self}"
            self.look()
            time.sleep(0.2)

    def running(self, comm: str) -> bool:
        self.look()
        return any(c.startswith(comm) and stat(p) is not None for p, c in self.procs.items())

    def left(self, docker: bool = False) -> list[str]:
        alive = [f"process {p} ({c})" for p, c in self.procs.items()
                 if (st := stat(p)) is not None and st.state != "Z" and _environ_owner(p) in self.owners]
        marked = [f"process {p}" for p in pids() if _environ_owner(p) in self.owners and p not in self.procs]
        locks = [str(lock) for lock in Path("/tmp").glob(".X*-lock")
                 if lock.read_text().strip().isdigit() and int(lock.read_text()) in self.procs.keys() | self.owners]
        found = alive + marked + locks + [str(f) for f in self.folders if f.exists()]
        if docker:
            found += _containers(self.owners)
        if self.gnuhealth_ports:
            found += _gnuhealth_databases(self.gnuhealth_ports)
        return found

    def nothing_left(self, docker: bool = False, timeout: float = GONE_WITHIN) -> None:
        deadline = time.monotonic() + timeout
        while (left := self.left(docker)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not left, f"left behind {timeout:g}s after the end: {left}"


def start(argv: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def script_ends(tmp_path: Path, backend: str, how: str) -> Watch:
    """The user's script: an environment made and reset, then an exception or SIGKILL."""
    (tmp_path / "script.py").write_text(SCRIPT)
    proc = start([PY, "script.py", backend, how], tmp_path)
    watch = Watch(proc.pid)
    assert proc.stdout.readline().strip() == "reset", proc.stdout.read()
    watch.look()
    assert watch.running("Orthanc") if backend == "local" else _containers(watch.owners), watch
    if how == "kill":
        proc.kill()
    assert proc.wait(30) != 0
    proc.stdout.close()
    proc.stdin.close()
    return watch


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_script_that_ends_unclosed_leaves_nothing(tmp_path, how):
    watch = script_ends(tmp_path, "local", how)
    assert any(c == "Xvfb" for c in watch.procs.values()) and watch.folders, watch
    watch.nothing_left(timeout=10)


# -- every command that starts a program, stopped by SIGTERM mid-work --------------------------
@dataclass(frozen=True)
class Command:
    argv: list[str]
    working: str          # a process (its comm) that runs once the command is at work
    slow: bool = True
    databases: bool = False   # it makes GNU Health's databases


COMMANDS = {
    "collect": Command(["collect", "--program", "orthanc", "--port", "0"], "chrom", slow=False),
    "collect-gnuhealth": Command(["collect", "--program", "gnuhealth", "--port", "0"], "trytond", databases=True),
    "bench": Command(["bench", "--program", "orthanc", "--repeats", "1", "--side-by-side", "none"], "Orthanc"),
    "reference": Command(["reference", "dicomscope/medspot-0*", "--runs", "1"], "java"),
    "soak": Command(["soak", "--episodes", "2", "--faults", "0", "--workers", "1", "--no-progress", "--out",
                     "soak"], "Orthanc"),
    "replay": Command(["replay", "{episodes}"], "Orthanc"),
    "validate": Command(["validate", "{dataset}", "--no-progress"], "Orthanc"),
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict[str, str]:
    """One recorded oracle episode of Orthanc Explorer and its MedSPOT-format export."""
    out = tmp_path_factory.mktemp("recorded")
    subprocess.run([*CLINIGYM, "run", "--scenario", "orthanc/open-patient-study", "--agent", "oracle", "--out",
                    str(out / "run"), "--no-progress"], check=True, capture_output=True)
    subprocess.run([*CLINIGYM, "export", str(out / "run"), "--medspot", str(out / "medspot")], check=True,
                   capture_output=True)
    return {"episodes": str(out / "run"), "dataset": str(out / "medspot")}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if c.slow else [])
                                  for n, c in COMMANDS.items()])
def test_sigterm_mid_work_leaves_nothing(tmp_path, request, name):
    command = COMMANDS[name]
    given = request.getfixturevalue("recorded") if "{" in " ".join(command.argv) else {}
    proc = start([*CLINIGYM, *[a.format(**given) for a in command.argv]], tmp_path)
    watch = Watch(proc.pid)
    try:
        # At work: its program runs, and has made its database (while the program starts).
        watch.until(lambda: proc.poll() is not None or (watch.running(command.working) and (
            not command.databases or _gnuhealth_databases(watch.gnuhealth_ports))), 300)
        assert proc.poll() is None, f"{name} ended before it was at work: {proc.stdout.read()[-2000:]}"
        assert watch.left(docker=True), "nothing to leave: the test would prove nothing"
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stdin.close()
    watch.nothing_left(docker=True)


@pytest.mark.slow
def test_sigterm_stops_view_and_leaves_nothing(tmp_path):
    """`clinigym view` of a display: its VNC server and web bridge go with it."""
    from clinigym.runtime.display import DisplaySession
    display = DisplaySession(window_manager=None)
    try:
        proc = start([*CLINIGYM, "view", display.name], tmp_path)
        watch = Watch(proc.pid)
        assert proc.stdout.readline().startswith("display "), proc.stdout.read()
        watch.until(lambda: watch.running("websockify") and watch.running("x11vnc"), 30)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        proc.stdout.close()
        proc.stdin.close()
        watch.nothing_left()
    finally:
        display.close()


# -- `clinigym cleanup` after a SIGKILL no guardian saw -------------------------------------------
GNUHEALTH_SCRIPT = """
import sys
from clinigym.runtime.backends import make_backend
from clinigym.spec.apps import load_app
backend = make_backend(load_app("gnuhealth"), sys.argv[1])
backend.reset()
print("reset", flush=True)
sys.stdin.read()
"""


def gnuhealth_reset(tmp_path: Path, backend: str) -> tuple[subprocess.Popen, Watch]:
    """A script that resets GNU Health on `backend` and waits: its process and what it made
    (its databases among them)."""
    (tmp_path / "script.py").write_text(GNUHEALTH_SCRIPT)
    proc = start([PY, "script.py", backend], tmp_path)
    watch = Watch(proc.pid)
    assert proc.stdout.readline().strip() == "reset", proc.stdout.read()
    watch.look()
    assert watch.gnuhealth_ports and _gnuhealth_databases(watch.gnuhealth_ports), watch
    return proc, watch


def kill_script(proc: subprocess.Popen) -> None:
    """SIGKILL to a test's script (however the test went), its pipes closed."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)
    proc.stdout.close()
    proc.stdin.close()


@pytest.mark.slow
def test_cleanup_after_sigkill_removes_databases(tmp_path):
    proc, watch = gnuhealth_reset(tmp_path, "local")
    try:
        guardians = [p for p in _descendants(proc.pid) if p != proc.pid and "guardian.py" in
                     Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")]
        assert len(guardians) == 1, guardians
        os.kill(guardians[0], signal.SIGKILL)   # as if the machine had no guardian: only cleanup is left
    finally:
        kill_script(proc)
    assert watch.left(), "nothing to clean up: the test would prove nothing"
    done = subprocess.run([*CLINIGYM, "cleanup", "--json"], capture_output=True, text=True, check=True)
    assert any("close command" in item for item in json.loads(done.stdout)), done.stdout
    watch.nothing_left(timeout=5)


def test_the_gnuhealth_slot_ports_are_those_of_its_program():
    """The watch finds GNU Health's databases by its slots' ports: block 6, port `tryton` first."""
    app = load_app("gnuhealth")
    assert (app.port_block, list(app.ports)[0]) == (6, "tryton")
