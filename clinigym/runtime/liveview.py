"""The live view: watch (or take over) a running program in a browser (`clinigym view`).

x11vnc serves the display on loopback with a one-time password and several
threads (single-threaded x11vnc can peg a core); Debian's websockify serves
Debian's noVNC page and bridges it to VNC, on loopback too.
"""
from __future__ import annotations

import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import requests

from clinigym.core.errors import Abort, ClinigymError, ProgramError
from clinigym.runtime.slots import free_port
from clinigym.runtime.waiting import wait_for

NOVNC = Path("/usr/share/novnc")


class ViewDied(ProgramError, Abort):
    """The VNC server or the web bridge exited."""


class LiveView:
    """VNC + noVNC for X display `:number`; a context manager, `url` opens the viewer."""

    def __init__(self, number: int):
        self.number = number
        self.password = secrets.token_urlsafe(6)[:8]   # VNC passwords are 8 characters at most
        self.vnc_port = free_port()
        self.web_port = free_port()
        self._workdir = Path(tempfile.mkdtemp(prefix="clinigym-view-"))
        self._procs: list[subprocess.Popen] = []

    @property
    def url(self) -> str:
        return (f"http://127.0.0.1:{self.web_port}/vnc.html?autoconnect=1&resize=scale"
                f"&host=127.0.0.1&port={self.web_port}&password={self.password}")

    def start(self) -> LiveView:
        if not (NOVNC / "vnc.html").exists():
            raise ClinigymError(f"noVNC is not installed ({NOVNC}): apt-get install novnc websockify")
        passwd = self._workdir / "passwd"
        subprocess.run(["x11vnc", "-storepasswd", self.password, str(passwd)], check=True, capture_output=True)
        self._spawn("x11vnc", ["x11vnc", "-display", f":{self.number}", "-localhost", "-rfbport",
                               str(self.vnc_port), "-rfbauth", str(passwd), "-forever", "-shared",
                               # -noshm: a container's X server cannot attach the host's
                               # shared memory (separate IPC namespaces)
                               "-threads", "-noshm", "-quiet"])
        self._spawn("websockify", ["websockify", "--web", str(NOVNC), f"127.0.0.1:{self.web_port}",
                                   f"127.0.0.1:{self.vnc_port}"])
        session = requests.Session()
        session.trust_env = False

        def page_up() -> bool:
            self._check_alive()
            try:
                return session.get(f"http://127.0.0.1:{self.web_port}/vnc.html", timeout=1).ok
            except requests.ConnectionError:
                return False
        wait_for(page_up, 20, "the noVNC page")
        return self

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self._workdir / f"{name}.log", "wb")
        self._procs.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True))
        log.close()

    def _check_alive(self) -> None:
        for proc in self._procs:
            if proc.poll() is not None:
                log = (self._workdir / f"{Path(proc.args[0]).name}.log").read_text(errors="replace")
                raise ViewDied(f"{proc.args[0]} exited with {proc.returncode}: {log[-500:]}")

    def wait(self, timeout: float | None = None) -> None:
        """Until the VNC server exits or `timeout` seconds have passed; raises if it exited."""
        try:
            self._procs[0].wait(timeout)
        except subprocess.TimeoutExpired:
            return
        self._check_alive()

    def close(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self._procs.clear()
        shutil.rmtree(self._workdir, ignore_errors=True)   # its password file and logs

    def __enter__(self) -> LiveView:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def find_display(target: str) -> int:
    """`:N`, a clinigym container's name (or its unique prefix), or a program name with
    exactly one running clinigym container."""
    if target.startswith(":") and target[1:].isdigit():
        return int(target[1:])
    from clinigym.runtime.backends.docker import LABEL
    from clinigym.runtime.images import engine
    containers = engine().containers.list(filters={"label": LABEL})
    matches = [c for c in containers if c.name == target] or \
              [c for c in containers if c.name.startswith(target) or c.labels.get(f"{LABEL}.app") == target]
    if len(matches) != 1:
        running = ", ".join(c.name for c in containers) or "none"
        raise LookupError(f"{target!r} names {len(matches)} running clinigym containers (running: {running})")
    return int(matches[0].labels[f"{LABEL}.display"])
