"""The Docker backend: the display, a window manager and the program run in a container
under a small supervisor (clinigym/runtime/backends/supervisor.py).

The host shares its X socket folder with the container, so screenshots and input
use the same code as the local backend; the work folder (state, pristine copy,
fixtures, logs), the program's folder and the supervisor are mounted at the same
paths (read-only but the work folder), so the program file's variables mean the same
on both sides, whether clinigym runs from a checkout or an installed wheel. Containers use the host's
network namespace (every service binds to loopback) or, without ports, no network at
all; never a bridge network.

Reset restarts the program inside the running container from its pristine
state; when the container, its supervisor or its display is wedged, the
container is recreated instead.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import threading
from pathlib import Path

from clinigym.core.errors import ProgramError
from clinigym.runtime import npm, pyenv
from clinigym.runtime.backends.base import Backend, Health, ProgramDied
from clinigym.runtime.display import DisplaySession, Frame, Geometry, server_answers
from clinigym.runtime.fixtures import StudySpec
from clinigym.runtime.images import ImageError, app_tag, engine
from clinigym.runtime.slots import note_close, pid_alive
from clinigym.runtime.waiting import WaitTimeout, wait_for
from clinigym.spec.apps import AppSpec

LABEL = "org.clinigym"           # every container clinigym starts carries it
LOCK_DIR = Path("/tmp")                # where X servers keep their .X<n>-lock files
X11_DIR = LOCK_DIR / ".X11-unix"
FIRST_DISPLAY = 100               # above the numbers local Xvfb servers pick for themselves
CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SUPERVISOR = Path(__file__).resolve().with_name("supervisor.py")


class SupervisorError(ProgramError):
    """The supervisor in the container did not answer, or refused a request."""


class DockerBackend(Backend):
    kind = "docker"

    def __init__(self, app: AppSpec, geometry: Geometry = Geometry(), memory: str = "4g", cpus: float = 2.0):
        # The engine and the image first: a backend that cannot start claims no work folder
        # (a process that retries would otherwise hold one more slot per try).
        client, image = engine(), app_tag(app)
        if not client.images.list(name=image):
            raise ImageError(f"no image {image}: build it with `clinigym images {app.name}` (or `make images`)")
        super().__init__(app, geometry)
        self.client, self.image = client, image
        self.memory, self.cpus = memory, cpus
        self.container = None
        self.number: int | None = None
        self.control = self.workdir / "supervisor.sock"
        self.container_name = f"clinigym-{app.name}-{secrets.token_hex(4)}"
        self.restart_reason: str | None = None   # why the last reset had to recreate the container
        self._cpu_file: Path | None = None

    # -- the container ------------------------------------------------------------------
    def _ensure_display(self) -> DisplaySession:
        if self.display is None or self._display_gone():
            self.recreate()
        return self.display

    def recreate(self) -> None:
        """A new container (display, window manager, supervisor), the old one removed."""
        # The new number is reserved before the old one is released: a display number
        # reused at once can meet the old server's socket while it is still going away.
        number = reserve_display()
        self.close_display()
        self.number = number
        g = self.geometry
        volumes = {str(self.workdir): {"bind": str(self.workdir), "mode": "rw"},
                   str(self.app.folder): {"bind": str(self.app.folder), "mode": "ro"},
                   str(SUPERVISOR.parent): {"bind": str(SUPERVISOR.parent), "mode": "ro"},
                   str(X11_DIR): {"bind": str(X11_DIR), "mode": "rw"}}
        # The program's npm packages and virtualenv, made on this machine (now, if missing), at the
        # same paths: a virtualenv runs on the image's python3, of the same Debian release.
        for folder in {Path(p) for p in {**npm.variables(self.app), **pyenv.variables(self.app)}.values()}:
            volumes[str(folder)] = {"bind": str(folder), "mode": "ro"}
        self.container = self.client.containers.run(
            self.image, name=self.container_name, detach=True, init=True,
            # Programs with ports share the host's network namespace (they bind loopback);
            # the others get none at all, so nothing they open is reachable from outside.
            network_mode="host" if self.app.ports else "none",
            command=["python3", str(SUPERVISOR), "--display", str(self.number),
                     "--geometry", f"{g.width}x{g.height}x{g.depth}", "--socket", str(self.control)],
            volumes=volumes, shm_size="1g", mem_limit=self.memory, nano_cpus=int(self.cpus * 1e9),
            environment={"PATH": CONTAINER_PATH, "LANG": "C.UTF-8"},
            labels={LABEL: "1", f"{LABEL}.app": self.app.name, f"{LABEL}.owner": str(os.getpid()),
                    f"{LABEL}.display": str(self.number), f"{LABEL}.workdir": str(self.workdir)})

        def up() -> bool:
            self.container.reload()
            if self.container.status == "exited":
                raise ProgramDied(f"container {self.container_name} exited: "
                                      f"{self.container.logs(tail=20).decode(errors='replace')}")
            try:
                self._call("ping", wait=1)
                return True
            except SupervisorError:
                return False
        wait_for(up, 30, f"the supervisor in {self.container_name}")
        self.display = DisplaySession(self.geometry, number=self.number)
        # For a sweep after this process died: in the container, as `close` runs them, with the
        # whole environment (the container's: nothing of this machine's goes into the note).
        note_close(self, self._env({}), str(self.control))

    def reset(self, args: list[str] = (), instance: tuple[StudySpec, ...] = ()) -> Frame:
        """Restart the program in the running container; recreate the container when that fails."""
        try:
            return super().reset(args, instance)
        except (SupervisorError, WaitTimeout, OSError) as exc:
            # A program that is merely slow or stuck on a dialog would be as slow in a new
            # container: only a container, supervisor or display that failed is replaced.
            gone = self._display_gone()
            if isinstance(exc, WaitTimeout) and not gone:
                raise
            self.restart_reason = f"{type(exc).__name__}: {exc}" + (f" ({gone})" if gone else "")
            self.recreate()
            return super().reset(args, instance)

    def _call(self, op: str, wait: float = 30, **request) -> dict:
        return call_supervisor(self.control, self.container_name, op, wait, **request)

    def _health(self) -> Health:
        if self.container is None:
            return Health("no container", {}, [])
        try:
            status = self._call("status", wait=5)   # one answer carries all three
        except SupervisorError as exc:
            return Health(f"the container does not answer ({exc})", {}, [])
        dead = [k for k, code in status["display"].items() if code is not None]
        return Health(f"the X display is gone ({', '.join(dead)} exited)" if dead else None,
                      status["procs"], status["stopped"])

    def _display_gone(self) -> str | None:
        return self._health().display_gone

    # -- processes in the container ------------------------------------------------------
    def _base_env(self) -> dict[str, str]:
        return {"PATH": CONTAINER_PATH}

    def _spawn(self, name, argv, cwd, env, log: Path) -> None:
        self._call("spawn", name=name, argv=argv, cwd=cwd, env=env, log=str(log))

    def _exit_statuses(self) -> dict[str, int | None]:
        return self._call("status")["procs"]

    def _kill(self, name: str | None, forget: bool) -> None:
        if self.container is not None:
            self._call("kill", names=None if name is None else [name], forget=forget)

    def _run(self, argv, cwd, env, timeout):
        reply = self._call("run", wait=timeout + 10, argv=argv, cwd=cwd, env=env, timeout=timeout)
        return reply["returncode"], reply.get("stdout", "") + reply.get("stderr", "")

    def memory_bytes(self) -> int:
        """The container's memory use without the page cache (cgroup v1 and v2)."""
        stats = self.client.api.stats(self.container.id, stream=False)["memory_stats"]
        detail = stats.get("stats", {})
        return stats["usage"] - detail.get("total_inactive_file", detail.get("inactive_file", 0))

    def _cgroup_file(self, name: str | None = None) -> str:
        """A file of the container's cgroup (its CPU counter by default), read directly."""
        if self._cpu_file is None:
            self.container.reload()
            self._cpu_file = cgroup_cpu_file(self.container.attrs["State"]["Pid"])
        try:
            return (self._cpu_file.parent / name if name else self._cpu_file).read_text()
        except OSError as exc:   # the cgroup goes with the container
            raise ProgramDied(f"container {self.container_name} is gone: {exc}") from exc

    def pids(self) -> list[int]:
        return [int(pid) for pid in self._cgroup_file("cgroup.procs").split()]

    def cpu_seconds(self) -> float:
        """The container's CPU usage from its cgroup (v2 `cpu.stat`, v1 `cpuacct.usage`),
        read directly: the engine's stats call takes a second or more."""
        text = self._cgroup_file()
        if self._cpu_file.name == "cpu.stat":
            return int(text.split("usage_usec", 1)[1].split()[0]) / 1e6
        return int(text) / 1e9

    def close_display(self) -> None:
        self._cpu_file = None
        if self.display is not None:
            self.display.close()
            self.display = None
        if self.devtools:
            self.devtools.close()
            self.devtools = None
        if self.container is not None:
            remove_container(self.container)
            self.container = None
        if self.number is not None:
            release_display(self.number)
            self.number = None


def call_supervisor(control: Path | str, container: str, op: str, wait: float = 30, /, **request) -> dict:
    """One request to the supervisor of `container` on its socket `control`; `wait` bounds
    the time to its answer."""
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(wait)
            s.connect(str(control))
            s.sendall(json.dumps({"op": op, **request}).encode() + b"\n")
            answer = s.makefile("rb").readline()
    except OSError as exc:
        raise SupervisorError(f"supervisor of {container}: {op}: {exc}") from None
    if not answer:
        raise SupervisorError(f"supervisor of {container}: {op}: no answer")
    reply = json.loads(answer)
    if "error" in reply:
        raise SupervisorError(f"supervisor of {container}: {op}: {reply['error']}")
    return reply


def cgroup_cpu_file(pid: int) -> Path:
    """The file that counts the CPU time of a process's cgroup: cgroup v2's `cpu.stat`,
    or v1's `cpuacct.usage` where the CPU controllers are mounted as v1 (a hybrid host)."""
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            for mount in (controllers, "cpuacct", "cpu,cpuacct"):
                file = Path(f"/sys/fs/cgroup/{mount}{path}/cpuacct.usage")
                if file.exists():
                    return file
    for line in lines:
        if line.startswith("0::"):
            return Path(f"/sys/fs/cgroup{line[3:]}/cpu.stat")
    raise ProgramError(f"no CPU accounting found for process {pid}")


def reserve_display() -> int:
    """A display number no server uses, reserved with an X lock file on the host (the
    container's Xvfb keeps its own lock inside the container): local Xvfb servers
    skip numbers whose lock names a live process."""
    with _RESERVING:   # two threads must not both judge one lock stale and both take it
        return _reserve_display()


_RESERVING = threading.Lock()


def _reserve_display() -> int:
    for n in range(FIRST_DISPLAY, 1000):
        lock = LOCK_DIR / f".X{n}-lock"
        if _server_answers(n):   # e.g. a container whose run was killed: its lock may be gone
            continue
        if not _take_lock(lock):
            if _lock_owner_alive(lock):
                continue
            lock.unlink(missing_ok=True)   # stale: its process is gone
            if not _take_lock(lock):
                continue
        (X11_DIR / f"X{n}").unlink(missing_ok=True)   # a socket left by a killed container
        return n
    raise ProgramError("no free X display number between 100 and 999")


def _take_lock(lock: Path) -> bool:
    """Create `lock` holding this process's id, all at once (written aside, then linked
    into place, as the X server does): a lock seen half-written would look stale to
    another thread reserving at the same moment, and both would get the number."""
    aside = lock.with_name(f"{lock.name}.{os.getpid()}.{threading.get_ident()}")
    aside.write_text(f"{os.getpid():>10}\n")
    try:
        os.link(aside, lock)
        return True
    except FileExistsError:
        return False
    finally:
        aside.unlink(missing_ok=True)


def _server_answers(number: int) -> bool:
    return server_answers(number, X11_DIR)


def _lock_owner_alive(lock: Path) -> bool:
    try:
        pid = int(lock.read_text().strip())
    except (OSError, ValueError):
        return True   # unreadable or empty: written by something else, not ours to take
    return pid_alive(pid)


def release_display(number: int) -> None:
    (LOCK_DIR / f".X{number}-lock").unlink(missing_ok=True)
    (X11_DIR / f"X{number}").unlink(missing_ok=True)


def remove_container(container) -> None:
    import docker
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass


def cleanup(all_containers: bool = False, client=None, owners: set[int] | None = None) -> list[str]:
    """Remove the containers (and their display locks and work folders) of clinigym runs
    whose process is gone, or of `owners` (processes that are gone or stopping); with
    `all_containers`, every clinigym container."""
    import shutil
    client = client or engine()
    removed = []
    for c in client.containers.list(all=True, filters={"label": LABEL}):
        owner = int(c.labels.get(f"{LABEL}.owner", "0") or 0)
        if owners is not None and owner not in owners and not all_containers:
            continue
        if owners is None and not all_containers and owner and pid_alive(owner):
            continue
        remove_container(c)
        if c.labels.get(f"{LABEL}.display"):
            release_display(int(c.labels[f"{LABEL}.display"]))
        workdir = c.labels.get(f"{LABEL}.workdir", "")
        if workdir.startswith("/tmp/clinigym-"):
            shutil.rmtree(workdir, ignore_errors=True)
        removed.append(c.name)
    return removed


def remove_stale_locks(owners: set[int] | None = None) -> list[str]:
    """Remove X display locks (and sockets) that no server answers on and whose process is
    gone or one of `owners`: left by an X server that was killed, or reserved for a
    container by a run that was (the X server's own rule for a stale lock)."""
    removed = []
    for lock in sorted(LOCK_DIR.glob(".X*-lock")):
        number = lock.name[2:-5]
        if not number.isdigit() or _server_answers(int(number)):
            continue
        try:
            pid = int(lock.read_text().strip())
        except (OSError, ValueError):
            continue   # being written, or gone
        if pid_alive(pid) and (owners is None or pid not in owners):
            continue
        release_display(int(number))
        removed.append(str(lock))
    return removed
