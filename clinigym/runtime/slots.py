"""Numbered work folders and loopback ports for running programs, lowest free first.

Programs show paths and addresses on screen (a file chooser's path bar, a viewer
window's address bar). With random names, two runs of the same scenario would
differ there, and a keyframe could not be compared with the live screen. So the
n-th program of a kind that runs at the same time gets the same folder and the
same ports every time: `/tmp/clinigym-<app>-<n>`, ports from a fixed block.

Each folder names its owner (the process that claimed it), and every process a backend
starts carries its owner's pid in the environment (`OWNER_ENV`): what a run that was
killed left behind is told from what a live run holds by whether the owner is alive.
A folder's close note (`CloseNote`) says how to remove what its program keeps outside it
(a database), for a sweep after its owner died before closing it.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from clinigym.core.errors import ProgramError
from clinigym.spec.apps import PORT_BASE, PORTS_PER_BLOCK, PORTS_PER_SLOT, SLOTS

ROOT = Path(tempfile.gettempdir())
OWNER_ENV = "CLINIGYM_OWNER"
DISPLAY_FOLDERS = "clinigym-display-"   # how a DisplaySession names its folder of logs: not a work folder
CLOSE_NOTE = "close.json"
GUARDIAN = Path(__file__).with_name("guardian.py")
_guarded: int | None = None   # the pid whose guardian runs (a forked child is an owner of its own)


@dataclass(frozen=True)
class Slot:
    number: int
    workdir: Path
    ports: dict[str, int]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class CloseNote:
    """A program's close commands as its backend runs them (rendered), kept in its work folder."""
    commands: list[list[str]]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)   # over the environment they run in
    supervisor: str | None = None   # the control socket of the container they run in; None: here


def mark_owner() -> None:
    """Make this process the owner of every process started from it from now on: they, and
    theirs, inherit its pid in their environment (`OWNER_ENV`); its guardian (started
    here, once) removes what is left of them when this process ends."""
    global _guarded
    os.environ[OWNER_ENV] = str(os.getpid())
    if _guarded == os.getpid():
        return
    _guarded = os.getpid()
    # By its path, without the mark (no sweep kills it), in a session of its own (see guardian.py).
    subprocess.Popen([sys.executable, str(GUARDIAN), str(os.getpid())],
                     env={k: v for k, v in os.environ.items() if k != OWNER_ENV}, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _owner(folder: Path) -> int | None:
    try:
        return int((folder / "owner").read_text())
    except (OSError, ValueError):
        return None


def _owner_alive(folder: Path) -> bool:
    owner = _owner(folder)
    return owner is not None and pid_alive(owner)


def _bindable(port: int) -> bool:
    """Whether a server can listen on the port. As servers do (Orthanc, trytond, Chromium), with
    SO_REUSEADDR: without it, the connections the last instance's server closed (TIME_WAIT, 60 s)
    would make the slot look taken, and the next run would take another instance (other ports
    on its screens)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def slot_ports(port_block: int, slot: int, port_names: list[str]) -> dict[str, int]:
    """The ports of the program's `slot`-th instance: fixed by its block (spec.apps)."""
    base = PORT_BASE + port_block * PORTS_PER_BLOCK + slot * PORTS_PER_SLOT
    return {name: base + i for i, name in enumerate(port_names)}


def free_port() -> int:
    """A free loopback port for a helper service (nothing on screen shows it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def _slots_locked() -> Iterator[None]:
    with open(ROOT / "clinigym-slots.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one claimer or sweeper at a time, across processes
        yield


def claim(app: str, port_block: int | None, port_names: list[str]) -> Slot:
    """The lowest slot whose folder is free (or left by a process that is gone) and whose
    ports can be bound; its folder is created and owned by this process."""
    if port_names and port_block is None:
        raise ValueError(f"{app}: ports need a port block")
    mark_owner()   # its guardian removes the folder if this process ends without closing it
    with _slots_locked():
        for n in range(SLOTS):
            folder = ROOT / f"clinigym-{app}-{n}"
            if folder.exists():
                if _owner_alive(folder):
                    continue
                shutil.rmtree(folder, ignore_errors=True)
            ports = slot_ports(port_block, n, port_names) if port_names else {}
            if not all(_bindable(p) for p in ports.values()):
                continue
            folder.mkdir()
            (folder / "owner").write_text(str(os.getpid()))
            return Slot(n, folder, ports)
    raise ProgramError(f"{app}: all {SLOTS} slots are taken (run `clinigym cleanup`?)")


def owned_folder(prefix: str) -> Path:
    """A new folder `/tmp/<prefix>XXXXXXXX` owned by this process: removed by a sweep once
    this process is gone (the folders of a collect session)."""
    mark_owner()
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=ROOT))
    (folder / "owner").write_text(str(os.getpid()))
    return folder


def _left(owners: set[int] | None) -> list[Path]:
    """The work folders (and owned folders) left by `owners`, or without `owners` by any
    process that is gone. A slot folder without an owner file is one whose claim was cut short."""
    found = []
    for folder in sorted(ROOT.glob("clinigym-*-*")):
        number = folder.name.rsplit("-", 1)[1]   # not a temporary folder's random suffix of digits
        slot = number.isdigit() and int(number) < SLOTS and not folder.name.startswith(DISPLAY_FOLDERS)
        if not folder.is_dir() or not (slot or (folder / "owner").exists()):
            continue
        if (not _owner_alive(folder)) if owners is None else _owner(folder) in owners:
            found.append(folder)
    return found


def note_close(backend: Any, env: dict[str, str], supervisor: str | None = None) -> None:
    """Keep a backend's close commands, rendered, in its work folder (written whole: a sweep
    may read it at any moment), with the environment `env` they run in over the sweeper's
    own (local) or in the container whose supervisor listens on `supervisor`. Written at
    every reset, before the reset makes what they remove."""
    if not backend.app.close:
        return
    note = CloseNote([[backend.render(a) for a in cmd] for cmd in backend.app.close], str(backend.state),
                     env, supervisor)
    aside = backend.workdir / f".{CLOSE_NOTE}.part"
    aside.write_text(json.dumps(asdict(note)))
    aside.replace(backend.workdir / CLOSE_NOTE)


def close_left(owners: set[int] | None, run: Callable[[CloseNote], str]) -> list[str]:
    """`run` the close note of every work folder left by `owners` (see `_left`), each once,
    while no claimer can take the slot (a new run would make the database they remove);
    what each run said."""
    said = []
    with _slots_locked():
        for folder in _left(owners):
            path = folder / CLOSE_NOTE
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):   # none (a program without close commands), or cut short
                continue
            path.unlink()
            said.append(f"{folder}: {run(CloseNote(**data))}")
    return said


def remove_workdirs(owners: set[int] | None = None) -> list[str]:
    """Remove the work folders owned by `owners` (processes that are gone or stopping), or
    without `owners` every one whose owner is gone; the removed folders."""
    removed = []
    with _slots_locked():   # not while a claimer looks at them
        for folder in _left(owners):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(str(folder))
    return removed
