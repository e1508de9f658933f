"""Numbered work folders and loopback ports for running programs, lowest free first.

Programs show paths and addresses on screen (a file chooser's path bar, a viewer
window's address bar). With random names, two runs of the same scenario would
differ there, and a keyframe could not be compared with the live screen. So the
n-th program of a kind that runs at the same time gets the same folder and the
same ports every time: `/tmp/clinigym-<app>-<n>`, ports from a fixed block.

Each folder names its owner (the process that claimed it), and every process a backend
starts carries its owner's pid in the environment (`OWNER_ENV`): what a run that was
killed left behind is told from what a live run holds by whether the owner is alive.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from clinigym.core.errors import ProgramError
from clinigym.spec.apps import PORT_BASE, PORTS_PER_BLOCK, PORTS_PER_SLOT, SLOTS

ROOT = Path(tempfile.gettempdir())
OWNER_ENV = "CLINIGYM_OWNER"
DISPLAY_FOLDERS = "clinigym-display-"   # how a DisplaySession names its folder of logs: not a work folder


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


def mark_owner() -> None:
    """Make this process the owner of every process started from it from now on: they, and
    theirs, inherit its pid in their environment (`OWNER_ENV`)."""
    os.environ[OWNER_ENV] = str(os.getpid())


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


def claim(app: str, port_block: int | None, port_names: list[str]) -> Slot:
    """The lowest slot whose folder is free (or left by a process that is gone) and whose
    ports can be bound; its folder is created and owned by this process."""
    if port_names and port_block is None:
        raise ValueError(f"{app}: ports need a port block")
    with open(ROOT / "clinigym-slots.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one claimer at a time, across processes
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


def remove_workdirs(owners: set[int] | None = None) -> list[str]:
    """Remove the work folders owned by `owners` (processes that are gone or stopping), or
    without `owners` every one whose owner is gone; the removed folders."""
    removed = []
    with open(ROOT / "clinigym-slots.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # not while a claimer looks at them
        for folder in sorted(ROOT.glob("clinigym-*-*")):
            if not folder.is_dir() or not folder.name.rsplit("-", 1)[1].isdigit() \
                    or folder.name.startswith(DISPLAY_FOLDERS):
                continue
            left = not _owner_alive(folder) if owners is None else _owner(folder) in owners
            if left:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(str(folder))
    return removed
