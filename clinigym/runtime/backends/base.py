"""What every backend shares: a program's lifecycle on an X display, and the probes
that conditions use.

Lifecycle: `reset()` kills the program's processes, restores the pristine state
folder (made once by the program file's `prepare` steps) and relaunches every
process, waiting for each one's readiness and then for a settled screen (`settling.py`).
Backends differ only in where the display and the processes run (this machine,
a container): the small set of `_`-methods at the end of the class.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import requests

from clinigym.core.audit import Item
from clinigym.core.elements import Caps, Tree
from clinigym.core.errors import ProgramDied, ProgramError, WaitTimeout
from clinigym.core.geometry import Box
from clinigym.runtime import npm, pyenv
from clinigym.runtime.a11y.session import A11ySession
from clinigym.runtime.backends.health import KILLED, Death, Health
from clinigym.runtime.backends.settling import Settling
from clinigym.runtime.backends.sql import SqlReader
from clinigym.runtime.browser import DevTools, RequestLog, chromium_command
from clinigym.runtime.display import DisplaySession, Frame, Geometry
from clinigym.runtime.fixtures import MODALITY_STUDIES, StudySpec, write_instance, write_studies
from clinigym.runtime.rescan import Rescan
from clinigym.runtime.slots import claim, mark_owner
from clinigym.runtime.waiting import wait_for
from clinigym.spec.apps import AppSpec, Process, render
from clinigym.spec.conditions import Target, holds
from clinigym.spec.record_sources import snapshot

__all__ = ["Backend", "Death", "Health", "ProgramDied", "base_environment"]


class Backend(Settling):
    kind = "?"
    accessibility = False   # the bridge and private buses, for `elements()` (docs/guides/accessibility.md)

    def __init__(self, app: AppSpec, geometry: Geometry = Geometry()):
        self.app = app
        self.geometry = geometry
        mark_owner()   # what it starts is this process's: `clinigym cleanup` tells a killed run's by it
        slot = claim(app.name, app.port_block, list(app.ports))
        self.workdir = slot.workdir
        self.state = self.workdir / "state"
        self.pristine = self.workdir / "pristine"
        self.logs = self.workdir / "logs"
        self.logs.mkdir()
        # The programs' temporary files: what a killed program leaves there (Chromium's
        # singleton socket folder) goes with the work folder, not into the machine's /tmp.
        self.tmp = self.workdir / "tmp"
        self.tmp.mkdir()
        self.ports = slot.ports
        self.display: DisplaySession | None = None
        self.devtools: DevTools | None = None
        self.requests: RequestLog | None = None
        self._versions: dict[str, str] | None = None
        r = app.settle.rescan
        self.rescan = Rescan(re.compile(r.thread), [self.state / f for f in r.files], self.pids) if r else None
        self._http = requests.Session()
        self._http.trust_env = False  # loopback only: never through a proxy
        self._sql = SqlReader()
        self.a11y = A11ySession(self)

    # -- variables ----------------------------------------------------------------------
    @property
    def variables(self) -> dict[str, str]:
        g = self.geometry
        v = {"STATE": str(self.state), "HOME": str(self.state / "home"),
             "FIXTURES": str(self.workdir / "fixtures"), "MODALITIES": str(self.workdir / "modalities"),
             "INSTANCE": str(self.workdir / "instance"), "APP_DIR": str(self.app.folder),
             "DISPLAY": self.display.name if self.display else "",
             "SCREEN_WIDTH": str(g.width), "SCREEN_HEIGHT": str(g.height)}
        v.update({f"PORT_{k.upper()}": str(p) for k, p in self.ports.items()})
        # ${NPM_<KEY>}: the program's npm packages in this machine's cache (fetched if missing).
        v.update(npm.variables(self.app))
        v.update(pyenv.variables(self.app))   # ${VENV}: the program's own Python packages
        return v

    def render(self, text: str) -> str:
        return render(text, self.variables)

    # -- lifecycle ----------------------------------------------------------------------
    def _prepare(self) -> None:
        """Build the pristine state once: files, fixtures, prepare steps; then snapshot it."""
        shutil.rmtree(self.state, ignore_errors=True)
        (self.state / "home").mkdir(parents=True)
        write_studies(self.workdir / "fixtures")
        write_studies(self.workdir / "modalities", MODALITY_STUDIES)
        for rel, text in self.app.files.items():
            dest = self.state / self.render(rel)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(self.render(text))
        try:
            for step in self.app.prepare:
                if step.run:
                    self._run_checked([self.render(a) for a in step.run], "prepare")
                else:
                    self._launch(self.app.process(step.start))
                    if step.upload_dicom:
                        self._upload(self.render(step.upload_dicom))
        finally:
            self.stop()
        shutil.rmtree(self.pristine, ignore_errors=True)
        shutil.copytree(self.state, self.pristine, symlinks=True)

    def _run_checked(self, cmd: list[str], what: str, timeout: float = 300) -> str:
        code, output = self._run(cmd, str(self.state), self._env({}), timeout)
        if code:
            raise ProgramError(f"{self.app.name}: {what} {cmd} failed ({code}): {output[-800:]}")
        return output

    def _start_input(self) -> None:
        timeout = self.app.processes[-1].ready.timeout
        for i, given in enumerate(self.app.start):
            self.display.type_text(self.render(given.type))
            until = given.until
            wait_for(lambda: all(holds(c, self) for c in until), timeout,  # noqa: B023 - called here, at once
                     f"{self.app.name}: start input {i + 1}: " + "; ".join(c.describe() for c in until))

    def _upload(self, url: str, folder: str = "fixtures") -> None:
        for path in sorted((self.workdir / folder).rglob("*.dcm")):
            resp = self._http.post(url, data=path.read_bytes(), timeout=30)
            resp.raise_for_status()

    def _env(self, extra: dict[str, str]) -> dict[str, str]:
        env = self._base_env()
        env.update({"DISPLAY": self._ensure_display().name, "HOME": str(self.state / "home"),
                    "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "NO_AT_BRIDGE": "1", "TZ": "UTC", "TMPDIR": str(self.tmp)})
        env.update({k: self.render(v) for k, v in extra.items()})
        self.a11y.apply(env, self.accessibility)
        return env

    def _command(self, proc: Process, extra: list[str]) -> list[str]:
        if proc.browser:
            port = self.ports.get(self.app.dom_port) if self.app.dom_port else None
            # The program's own Chromium switches go last (Chromium reads switches in any order).
            return chromium_command(self.render(proc.browser), str(self.state / "chromium-profile"),
                                    self.geometry.width, self.geometry.height, port) + \
                [self.render(f) for f in proc.browser_flags]
        args = []
        for arg in [*proc.command, *extra]:
            arg = self.render(arg)
            # No shell runs the command, so patterns are expanded here (sorted, deterministic).
            matches = sorted(glob.glob(arg)) if glob.has_magic(arg) else []
            args += matches or [arg]
        return args

    def _launch(self, proc: Process, extra: list[str] = (), wait: bool = True) -> None:
        self._spawn(proc.name, self._command(proc, list(extra)), self.render(proc.cwd), self._env(proc.env),
                    self.logs / f"{proc.name}.log")
        if wait:
            self._wait_ready(proc)

    def _restore_and_launch(self, args: list[str], instance: tuple[StudySpec, ...] = ()) -> None:
        """The restore commands, and every process in order, each ready before the next (a
        `concurrent` one once all have started); the restore runs while the processes before
        `restore_before` start. `args` (else its `default_args`) go to the main (last) process;
        a family's `instance` studies are written to ${INSTANCE} first, and uploaded once the
        process `instance.after` is ready."""
        shutil.rmtree(self.workdir / "instance", ignore_errors=True)
        write_instance(self.workdir / "instance", instance)
        processes = self.app.processes
        before = self.app.restore_before or processes[0].name
        with ThreadPoolExecutor(1) as pool:   # leaving the block waits for the restore
            restoring = pool.submit(self._restore, bool(instance))
            for proc in processes:
                if proc.name == before:
                    restoring.result()
                main = proc is processes[-1]
                self._launch(proc, (args or proc.default_args) if main else (), wait=not proc.concurrent)
                if instance and self.app.instance and proc.name == self.app.instance.after:
                    self._upload(self.render(self.app.instance.upload_dicom), "instance")
        for proc in processes:
            if proc.concurrent:
                self._wait_ready(proc)

    def _restore(self, instance: bool) -> None:
        for cmd in [*self.app.restore, *(self.app.restore_instance if instance else ())]:
            self._run_checked([self.render(a) for a in cmd], "restore")

    def _wait_ready(self, proc: Process) -> None:
        ready = proc.ready
        deadline = time.monotonic() + ready.timeout

        def left() -> float:
            return max(0.1, deadline - time.monotonic())

        def alive_check(probe):
            def check():
                code = self.exit_status(proc.name)
                if code is not None:
                    raise ProgramDied(f"{proc.name} exited with {code} while starting; "
                                      f"log: {self.log_tail(proc.name)}")
                return probe()
            return check

        try:
            if ready.http:
                url = self.render(ready.http)
                wait_for(alive_check(lambda: self._http.get(url, timeout=1).status_code == 200),
                         left(), f"{url} to answer")
            if ready.window:
                wait_for(alive_check(lambda: self.display.has_window(ready.window)),
                         left(), f"a window titled /{ready.window}/")
            if ready.dom:
                wait_for(alive_check(lambda: self.resolve(Target(selector=ready.dom))),
                         left(), f"DOM element {ready.dom}")
        except WaitTimeout as exc:
            raise WaitTimeout(f"{self.app.name}/{proc.name}: {exc}; log: {self.log_tail(proc.name)}") from None

    def log_tail(self, name: str, chars: int = 600) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def reset(self, args: list[str] = (), instance: tuple[StudySpec, ...] = ()) -> Frame:
        """Bring the program to its pristine state, `args` after its main (last) process's command
        line, a family's `instance` studies loaded; returns the settled first frame."""
        self.stop()
        display = self._ensure_display()
        if not self.pristine.exists():
            self._prepare()
        shutil.rmtree(self.state, ignore_errors=True)
        shutil.copytree(self.pristine, self.state, symlinks=True)
        # Park the pointer where it hovers nothing, so hover effects cannot differ between resets.
        display.move(self.geometry.width - 1, self.geometry.height - 1)
        self._restore_and_launch(args, instance)
        if self.rescan:
            self.rescan.mark()
        self._start_input()
        return self.first_screen()

    def stop(self) -> None:
        """Kill every process of the program (not the display)."""
        if self.devtools:
            self.devtools.close()
            self.devtools = None
        self.unwatch_requests()
        self._sql.close()   # the next reset replaces the database
        self._kill(None, forget=True)

    def watch_requests(self) -> None:
        """Record the browser's network requests from now on (a browser program; else nothing)."""
        self.unwatch_requests()
        if self.app.dom_port is not None:
            self.requests = RequestLog(self.ports[self.app.dom_port])

    def take_requests(self) -> list[dict[str, str]]:
        """The requests recorded since `watch_requests` or the last take (method, url)."""
        return self.requests.take() if self.requests else []

    def unwatch_requests(self) -> None:
        if self.requests:
            self.requests.close()
            self.requests = None

    def kill(self, name: str | None = None) -> None:
        """Kill the program (or one of its processes) as a crash would; used by tests."""
        self._kill(name, forget=False)

    def dead(self, quitting: frozenset[str] = frozenset()) -> Death | None:
        """Why the program is not running, or None when it is; with its cause (`Death`). A
        process in `quitting` (the step asked the program to quit) may end with status 0."""
        health = self._health()
        if health.display_gone:
            return Death(health.display_gone, infrastructure=True)
        for name, code in health.exits.items():
            if code is not None and not (code == 0 and name in quitting):
                return Death(f"{name} exited with status {code}", infrastructure=code in KILLED)
        if health.stopped:   # it draws nothing and answers nothing until someone continues it
            return Death(f"{', '.join(health.stopped)} stopped by a signal (SIGSTOP): it cannot run",
                         infrastructure=True)
        return None

    def close(self) -> None:
        try:
            self.stop()
            for cmd in self.app.close if self.state.exists() else []:   # made by a reset, outside the folder
                self._run_checked([self.render(a) for a in cmd], "close", timeout=60)
        finally:
            self.close_display()
            self.a11y.close()
            shutil.rmtree(self.workdir, ignore_errors=True)

    def package_versions(self) -> dict[str, str]:
        """Versions of the program's Debian packages where it runs (recorded with episodes)."""
        if self._versions is None:
            code, out = self._run(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n",
                                   *self.app.debian_packages], "/", {"PATH": "/usr/bin:/bin"}, 30)
            found = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
            self._versions = {p: found.get(p, "not installed") for p in self.app.debian_packages}
        return self._versions

    # -- probe (conditions) -------------------------------------------------------------
    def resolve(self, target: Target) -> Box | None:
        g = self.geometry
        if target.named is not None:
            box = self.a11y.locate(self.accessibility, target.named, Caps(), bool(target.row))
            return None if box is None else target.in_element(box)
        if target.box is not None:
            return Box(*target.box)
        if target.box_percent is not None:
            x1, y1, x2, y2 = target.box_percent
            return Box(x1 / 100 * g.width, y1 / 100 * g.height, x2 / 100 * g.width, y2 / 100 * g.height)
        if self.app.dom_port is None:
            raise ValueError(f"{self.app.name} has no DOM: a selector target needs a browser program")
        return self.dom_client().element_box(target.selector, target.text)

    def dom_client(self) -> DevTools:
        """The DevTools client of a browser program, connected on first use."""
        if self.devtools is None:
            self.devtools = DevTools(self.ports[self.app.dom_port])
        return self.devtools

    def elements(self, caps: Caps = Caps()) -> Tree:
        """The program's accessibility tree now (read it after the screen settled)."""
        return self.a11y.read(self.accessibility, caps)

    def has_window(self, pattern: str) -> bool:
        return self.display.has_window(pattern)

    def http_get(self, url: str) -> requests.Response:
        return self._http.get(self.render(url), timeout=5)

    def state_glob(self, pattern: str) -> list[str]:
        return glob.glob(str(self.state / self.render(pattern)), recursive=True)

    def exit_status(self, process: str) -> int | None:
        return self._exit_statuses().get(process)

    def records(self, name: str) -> dict[str, Item]:
        """One set of the program's records (its `records:`), read now."""
        return snapshot({name: self.app.records[name]}, self)[name]

    def sql(self, query: str) -> list[list[str]]:
        """The rows a read-only query on the program's database answers (values as text, NULL
        as '')."""
        return self.sql_many([query])[0]

    def sql_many(self, queries: list[str]) -> list[list[list[str]]]:
        """The rows of each read-only query on the program's database, through one kept
        connection (`clinigym.runtime.backends.sql`; the safety audit reads a program's
        record sets after every action)."""
        if not self.app.database:
            raise ValueError(f"{self.app.name} declares no database: an sql condition needs one")
        try:
            return self._sql.rows(self.render(self.app.database), [self.render(q) for q in queries])
        except psycopg.Error as exc:
            raise ProgramError(f"{self.app.name}: sql {queries} failed: {exc}") from exc

    # -- where things run: each backend implements these ---------------------------------
    def _ensure_display(self) -> DisplaySession:
        """The display, (re)started when it is gone."""
        raise NotImplementedError

    def _base_env(self) -> dict[str, str]:
        raise NotImplementedError

    def _spawn(self, name: str, argv: list[str], cwd: str, env: dict[str, str], log: Path) -> None:
        raise NotImplementedError

    def _exit_statuses(self) -> dict[str, int | None]:
        """Every process of the program with its exit status (None while it runs), in one look."""
        raise NotImplementedError

    def _health(self) -> Health:
        """The display, the processes' exit statuses and the stopped processes, in one look
        (`dead()` runs twice per step)."""
        raise NotImplementedError

    def _kill(self, name: str | None, forget: bool) -> None:
        """SIGKILL the process group of one process (or all) and wait for it; `forget`
        drops it from the processes whose exit `dead()` reports."""
        raise NotImplementedError

    def _run(self, argv: list[str], cwd: str, env: dict[str, str], timeout: float) -> tuple[int | None, str]:
        """Run a command to completion: (exit status, output tail)."""
        raise NotImplementedError

    def close_display(self) -> None:
        raise NotImplementedError

    def memory_bytes(self) -> int:
        """Memory the program and its display use."""
        raise NotImplementedError

    def cpu_seconds(self) -> float:
        """CPU seconds the program and its display have used so far (a counter: only
        differences mean something); with its database's, `work_seconds`."""
        raise NotImplementedError

    def pids(self) -> list[int]:
        """The processes of the program and its display, as the host numbers them."""
        raise NotImplementedError


def base_environment() -> dict[str, str]:
    """The environment a program starts from on this machine."""
    env = dict(os.environ)
    env.pop("WAYLAND_DISPLAY", None)
    return env
