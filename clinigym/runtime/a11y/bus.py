"""A private session bus and AT-SPI bus per display, never the machine's own.

`A11yBus(folder)` starts a session `dbus-daemon` on the socket ``<folder>/bus`` with
``XDG_RUNTIME_DIR=<folder>`` (a 0700 folder in the backend's work folder), in a process group
of its own. The first ``org.a11y.Bus.GetAddress`` on it has the daemon start
`at-spi-bus-launcher` (its Debian service file), which puts the AT-SPI bus at
``<folder>/at-spi/bus`` (starting it by hand as well raced that and made two). The programs
get both addresses (`env`); toolkits' bridges register there. Path sockets, never abstract
ones: a container that mounts the work folder at the same path (the Docker backend) reaches
them even without a network. Everything started here inherits this process's owner mark
(`slots.OWNER_ENV`), so a sweep finds what a killed run left.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from pathlib import Path

from clinigym.core.errors import ProgramError
from clinigym.runtime.a11y.dbus import Call, Connection, DBusError
from clinigym.runtime.procfs import pids, stat
from clinigym.runtime.waiting import poll, wait_for

__all__ = ["A11yBus", "bus_processes"]

START_TIMEOUT = 10.0
PR_SET_CHILD_SUBREAPER = 36


class A11yBus:
    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o700)
        self.session = f"unix:path={folder / 'bus'}"
        env = {k: v for k, v in os.environ.items()
               if k not in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS", "WAYLAND_DISPLAY")}
        env["XDG_RUNTIME_DIR"] = str(folder)
        # What the daemon activates outlives it by a moment: this process adopts and reaps it
        # (else it stays a zombie of PID 1, which may never reap).
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        with open(folder / "dbus.log", "ab") as log:
            try:
                self._daemon = subprocess.Popen(
                    ["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address={self.session}"],
                    env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            except FileNotFoundError:
                raise ProgramError("accessibility needs dbus-daemon and at-spi2-core on this machine "
                                   "(apt-get install dbus-daemon at-spi2-core)") from None
        try:
            self.a11y = wait_for(self._address, START_TIMEOUT,
                                 f"the AT-SPI bus of {folder} (at-spi-bus-launcher, from at-spi2-core)")
        except BaseException:
            self.close()
            raise

    def _address(self) -> str | None:
        if self._daemon.poll() is not None:
            raise ProgramError(f"dbus-daemon for {self.folder} exited with {self._daemon.returncode}: "
                               f"{(self.folder / 'dbus.log').read_text(errors='replace')[-400:]}")
        if not (self.folder / "bus").exists():
            return None
        with Connection(self.session) as conn:
            try:
                return str(conn.call(Call("org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress"), 5)[0])
            except DBusError:   # the launcher is still starting
                return None

    def env(self) -> dict[str, str]:
        """What a program needs to find the buses (atk-bridge and Qt read AT_SPI_BUS_ADDRESS)."""
        return {"DBUS_SESSION_BUS_ADDRESS": self.session, "AT_SPI_BUS_ADDRESS": self.a11y}

    def close(self) -> None:
        """End the daemon's group and what it activated (the launcher, its bus, the registry),
        and wait until they are gone."""
        started = bus_processes(self.folder)
        try:
            os.killpg(self._daemon.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        for pid in started:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            self._daemon.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(self._daemon.pid, signal.SIGKILL)
            self._daemon.wait(5)
        if not poll(lambda: _gone(started), 5):
            for pid in started:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            poll(lambda: _gone(started), 5)


def bus_processes(folder: Path) -> list[int]:
    """The processes that run with `folder` as their runtime folder: the daemon, and what it
    started (they inherit its environment)."""
    mark = f"XDG_RUNTIME_DIR={folder}".encode()
    found = []
    for pid in pids():
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:   # gone, or another user's
            continue
        if mark in env:
            found.append(pid)
    return found


def _gone(started: list[int]) -> bool:
    for pid in started:
        try:
            os.waitpid(pid, os.WNOHANG)   # adopted by this process (a subreaper): reap it
        except ChildProcessError:
            pass
    return all((st := stat(pid)) is None or st.state == "Z" for pid in started)
