"""Programs as data: `containers/<app>/app.yaml`.

A program file says which Debian packages it needs, which files make up its
pristine state (pre-seeded preferences, configuration), how that state is
prepared once (fixture studies indexed, uploaded), which processes run it and
how each is known to be ready. Reset = kill the process groups, restore the
pristine state, relaunch. Adding an X11 program needs only such a file, in any
folder of the search path (`clinigym.spec.paths`).

Ports: a program with ports declares its `port_block`, unique among all programs
(checked at load), so that adding a program never moves another's ports (and so
the addresses it shows on screen). Block b, slot n (the n-th instance running at
once) gets ports `PORT_BASE + b * PORTS_PER_BLOCK + n * PORTS_PER_SLOT + i`.
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from clinigym.spec import paths
from clinigym.spec.conditions import Condition, listify
from clinigym.spec.files import Spec, SpecError, parse, read_yaml
from clinigym.spec.record_sources import RecordSet

SLOTS = 64                       # instances of one program at once
PORTS_PER_SLOT = 10
PORTS_PER_BLOCK = SLOTS * PORTS_PER_SLOT
# Below Linux's ephemeral range (32768-60999), so that a port of a block is normally free
# (one that is taken makes the claimer skip the slot): blocks 0-18.
PORT_BASE = 20000
PORT_BLOCKS = (32768 - PORT_BASE) // PORTS_PER_BLOCK
BASE_VARS = ("STATE", "HOME", "FIXTURES", "MODALITIES", "INSTANCE", "DISPLAY", "APP_DIR", "SCREEN_WIDTH",
             "SCREEN_HEIGHT")
_VAR = re.compile(r"\$\{([A-Z0-9_]+)\}")


class Ready(Spec):
    """All the given conditions must hold, within `timeout` seconds."""
    window: str | None = Field(None, description="regex matched against top-level window titles")
    http: str | None = Field(None, description="URL that must answer 200")
    dom: str | None = Field(None, description="CSS selector that must be visible (browser programs)")
    painted: list[int] | None = Field(
        None, min_length=4, max_length=4,
        description="screen box [x1, y1, x2, y2] that the settled first screen must show drawn (not all "
                    "one colour): a window still black, or a pane still empty, while the program loads "
                    "is not settled")
    timeout: float = 60.0

    @field_validator("painted")
    @classmethod
    def _a_box(cls, v):
        # An empty box is one colour forever: every reset would wait out the timeout.
        if v is not None and not (0 <= v[0] < v[2] and 0 <= v[1] < v[3]):
            raise ValueError(f"not a box [x1, y1, x2, y2] with 0 <= x1 < x2 and 0 <= y1 < y2: {v}")
        return v


class Process(Spec):
    name: str
    command: list[str] | None = None
    browser: str | None = Field(None, description="URL opened in Debian's Chromium in app mode")
    browser_flags: list[str] = Field([], description="extra Chromium switches for this program only "
                                                     "(e.g. software WebGL)")
    env: dict[str, str] = {}
    cwd: str = "${STATE}"
    ready: Ready = Ready()
    default_args: list[str] = Field([], description="the main (last) process's arguments when a scenario gives "
                                                  "none")
    args_match: str | None = Field(None, description="a regex that each argument a scenario gives the main "
                                                     "process must match, as written (a client's server URL "
                                                     "that must stay on loopback)")
    concurrent: bool = Field(False, description=(
        "the next process starts without waiting for this one to be ready, which is waited for once "
        "every process has started (a server that no later process talks to while starting)"))

    @model_validator(mode="after")
    def _one_launcher(self):
        if (self.command is None) == (self.browser is None):
            raise ValueError("give exactly one of `command` or `browser`")
        if self.browser_flags and self.browser is None:
            raise ValueError("`browser_flags` goes with `browser`")
        return self


class PrepareStep(Spec):
    """Builds the pristine state once; the result is snapshotted and restored at every reset."""
    run: list[str] | None = Field(None, description="command run to completion in ${STATE}")
    start: str | None = Field(None, description="process started (and waited for) during preparation")
    upload_dicom: str | None = Field(None, description="URL every fixture file is POSTed to")

    @model_validator(mode="after")
    def _one_kind(self):
        if sum(v is not None for v in (self.run, self.start)) != 1:
            raise ValueError("give exactly one of `run` or `start`")
        if self.upload_dicom and not self.start:
            raise ValueError("`upload_dicom` goes with `start`")
        return self


class InstanceLoad(Spec):
    """How a family instance's generated studies (`clinigym.spec.cohort`) reach a server program
    at every reset: POSTed once a process is ready. (Every program finds them as files in
    ${INSTANCE}, written before its processes start: a program that opens files needs none.)"""
    after: str = Field(description="the process that must be ready first")
    upload_dicom: str = Field(description="URL every generated file is POSTed to")


class NpmPackage(Spec):
    """A pinned npm package (a web program's built files), fetched by clinigym.runtime.npm into the
    cache and exposed to the program file as ${NPM_<KEY>}, the extracted package folder."""
    package: str = Field(description="npm name, e.g. @ohif/app")
    version: str = Field(pattern=r"^\d+\.\d+\.\d+\S*$", description="exact version")
    integrity: str = Field(pattern=r"^sha(256|384|512)-[A-Za-z0-9+/=]+$",
                           description="SRI hash of the tarball, as the registry's dist.integrity")


class PythonPackages(Spec):
    """A program shipped on PyPI: pinned packages installed into a virtualenv of its own by
    clinigym.runtime.pyenv, exposed to the program file as ${VENV}."""
    packages: list[str] = Field(min_length=1, description="exact pins, name==version")
    system_site_packages: bool = Field(False, description="the virtualenv sees Debian's Python packages "
                                                          "(bindings such as python3-gi)")

    @field_validator("packages")
    @classmethod
    def _pinned(cls, v):
        loose = [p for p in v if not re.fullmatch(r"[A-Za-z0-9_.\-\[\],]+==[0-9][A-Za-z0-9_.+!\-]*", p)]
        if loose:
            raise ValueError(f"pin every package to one version (name==version): {', '.join(loose)}")
        return v


class StartInput(Spec):
    """Typed into the program's focused window at every start, once its processes are ready,
    before the first screen: what a user must do at each launch that no option gets past
    (a password dialog). `until` is waited for afterwards."""
    type: str = Field(min_length=1, description="text typed through XTest (\\n is Return)")
    until: list[Condition] = Field(min_length=1, description="all hold once the input took effect")

    _until_list = field_validator("until", mode="before")(listify)


def npm_variable(key: str) -> str:
    return f"NPM_{key.upper()}"


class RescanSpec(Spec):
    """A thread of the program that rescans state files on a timer and draws what it finds."""
    thread: str = Field(min_length=1, description="regular expression on the thread's name (comm)")
    files: list[str] = Field(min_length=1, description="the files it rescans, relative to the state folder")

    @field_validator("thread")
    @classmethod
    def _regex(cls, v):
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return v


class Settle(Spec):
    quiet: float = Field(0.25, gt=0, description="seconds without change that mean settled")
    timeout: float = Field(10.0, gt=0)
    min_changed: int = Field(40, ge=0, description="changes of fewer pixels are ignored (carets)")
    idle_quiet: float | None = Field(None, gt=0, description=(
        "seconds without change that mean settled while the program (its processes and display, "
        "or its container, and the server processes of its database) uses less than idle_cpu cores; "
        "measured per program by `clinigym bench`"))
    idle_cpu: float = Field(0.05, gt=0, description="cores below which the program counts as idle")
    timer_horizon: float | None = Field(None, gt=0, description=(
        "with idle_quiet: a program whose thread sleeps in a poll or epoll wait that a timer ends "
        "within this many seconds is not idle (it wakes by itself and may draw again)"))
    timer_futex: bool = Field(False, description=(
        "with timer_horizon: a thread in a timed futex wait due within the horizon counts too "
        "(a JVM's timers and sleeps; read from the process's memory)"))
    timer_ignore: str | None = Field(None, description=(
        "with timer_horizon: a regular expression; threads whose name matches are left out of "
        "the timer look (a VM's periodic housekeeping, a toolkit's own event loop)"))
    rescan: RescanSpec | None = Field(None, description=(
        "after a step changed one of its files, the screen is not settled until this thread has "
        "woken once (a timed futex wait, such as a JVM's Thread.sleep, ended): what it draws then "
        "belongs to that step"))
    page_busy: str | None = Field(None, min_length=1, description=(
        "a JavaScript expression evaluated in the front page (needs dom_port) when the screen looks "
        "settled: while it is true, the page's own work is under way (a request in flight, a timer due "
        "soon) and the screen is not settled"))
    first_idle_quiet: float | None = Field(None, gt=0, description=(
        "idle_quiet for the first screen of a reset: the pointer rests in a corner then, so a "
        "window that only outlasts a hover effect (a tooltip's delay) may be left out"))

    @model_validator(mode="after")
    def _idle_shorter(self):
        if self.idle_quiet is not None and self.idle_quiet >= self.quiet:
            raise ValueError(f"idle_quiet ({self.idle_quiet:g}) must be shorter than quiet ({self.quiet:g})")
        if self.timer_horizon is not None and self.idle_quiet is None:
            raise ValueError("timer_horizon needs an idle_quiet")
        if (self.timer_futex or self.timer_ignore is not None) and self.timer_horizon is None:
            raise ValueError("timer_futex and timer_ignore need a timer_horizon")
        if self.timer_ignore is not None:
            try:
                re.compile(self.timer_ignore)
            except re.error as exc:
                raise ValueError(f"timer_ignore is not a regular expression: {exc}") from None
        if self.first_idle_quiet is not None and (self.idle_quiet is None or self.first_idle_quiet > self.idle_quiet):
            raise ValueError("first_idle_quiet needs an idle_quiet at least as long")
        return self


A11ySource = Literal["atspi", "devtools"]
# Set by clinigym when accessibility is on (the program's private buses): not the file's to set.
A11Y_RESERVED = ("DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS", "NO_AT_BRIDGE")


class Accessibility(Spec):
    """How the program's accessibility tree is read, when a run asks for it
    (docs/guides/accessibility.md)."""
    source: A11ySource = Field(description=(
        "atspi: the toolkit's bridge on a private AT-SPI bus (GTK, Qt, wx, Java through the ATK wrapper); "
        "devtools: Chromium's own tree through the program's DevTools port (dom_port)"))
    env: dict[str, str] = Field({}, description=(
        "the toolkit's switches, added to every process's environment when accessibility is on "
        "(GTK 2: GTK_MODULES=gail:atk-bridge; Qt 5: QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1)"))
    walk: Literal["collection", "levels"] = Field("collection", description=(
        "atspi: how the showing elements are found. collection: one Collection.GetMatches call, "
        "which the bridge answers by visiting every element, hidden ones too (GTK 2 needs it: "
        "its open menus' parents do not say they are showing); levels: a walk level by level "
        "that never enters a hidden element (the Java ATK wrapper answers each of its calls "
        "quickly but GetMatches slowly). A program without Collection (Qt) is walked by levels."))

    @field_validator("env")
    @classmethod
    def _switches(cls, v):
        for key in v:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                raise ValueError(f"env: {key!r} is not an environment variable name")
            if key in A11Y_RESERVED:
                raise ValueError(f"env: {key} is set by clinigym when accessibility is on (the program's "
                                 f"private buses); leave it out")
        return v

    @model_validator(mode="after")
    def _walk_is_atspi(self):
        if self.walk != "collection" and self.source != "atspi":
            raise ValueError(f"walk: {self.walk} goes with source atspi (Chromium's tree comes whole)")
        return self


class AppSpec(Spec):
    name: str
    title: str
    description: str = ""
    release: Literal["bookworm", "bullseye"] = Field(
        "bookworm", description="Debian release the packages come from; other than the host's: Docker only")
    debian_packages: list[str] = []
    ports: list[str] = Field([], max_length=PORTS_PER_SLOT, description="loopback ports, as ${PORT_<NAME>}")
    port_block: int | None = Field(None, ge=0, lt=PORT_BLOCKS,
                                   description="this program's fixed block of ports (needed with ports)")
    dom_port: str | None = Field(None, description="port name of Chromium's DevTools endpoint")
    files: dict[str, str] = {}
    npm: dict[str, NpmPackage] = Field({}, description="npm packages; each is ${NPM_<KEY>}")
    python: PythonPackages | None = Field(None, description="Python packages in a virtualenv: ${VENV}")
    prepare: list[PrepareStep] = []
    restore: list[list[str]] = Field([], description=(
        "commands run at every reset after the pristine state folder is back and before the processes "
        "start: state kept outside that folder (a database copied from its template) is restored here"))
    restore_instance: list[list[str]] = Field([], description=(
        "commands run after `restore` at a reset that loads a task family's instance (its studies and "
        "${INSTANCE}/people.json written): the generated studies or people put where the program reads "
        "them; never at a fixed scenario's reset"))
    restore_before: str | None = Field(None, description=(
        "the process the restore commands must end before: they run while the processes before it "
        "start, which read none of what they restore (default: before the first process)"))
    processes: list[Process]
    close: list[list[str]] = Field([], description=(
        "commands run when the program's instance closes, after its processes stop: what `restore` "
        "made outside the state folder (the instance's database) is removed here"))
    start: list[StartInput] = Field([], description="input at every start, before the first screen")
    instance: InstanceLoad | None = Field(None, description=(
        "how a task family's generated studies are loaded into a server at each reset "
        "(clinigym.spec.task_families); they are in ${INSTANCE} as files in any case"))
    database: str | None = Field(None, description=(
        "PostgreSQL connection URI of the program's database, read by `sql` conditions (loopback only)"))
    backends: list[Literal["local", "docker"]] = Field(["local", "docker"], min_length=1,
                                                      description="where the program can run")
    settle: Settle = Settle()
    records: dict[str, RecordSet] = Field({}, description="the program's records, read by the safety audit of "
                                                          "plan and goal episodes (clinigym.spec.record_sources)")
    accessibility: Accessibility | None = Field(None, description=(
        "how its accessibility tree is read; the bridge runs only when a run asks for the tree"))
    folder: Path = Field(exclude=True)

    @field_validator("processes")
    @classmethod
    def _some(cls, v):
        if not v:
            raise ValueError("at least one process is needed")
        return v

    @model_validator(mode="after")
    def _references(self):
        names = {p.name for p in self.processes}
        known = set(BASE_VARS) | {f"PORT_{p.upper()}" for p in self.ports}
        known |= {npm_variable(k) for k in self.npm}
        if self.python is not None:
            known.add("VENV")
        for key in self.npm:
            if not re.fullmatch(r"[A-Za-z0-9_]+", key):
                raise ValueError(f"npm key {key!r}: letters, digits and _ only (it names ${{NPM_<KEY>}})")
        for i, step in enumerate(self.prepare):
            if step.start and step.start not in names:
                raise ValueError(f"prepare[{i}].start names no process: {step.start!r}")
        if self.instance is not None and self.instance.after not in names:
            raise ValueError(f"instance.after names no process: {self.instance.after!r}")
        for p in self.processes[:-1]:
            if p.default_args or p.args_match:
                raise ValueError(f"process {p.name!r}: default_args and args_match go with the main (last) process")
        if self.restore_before is not None and self.restore_before not in names:
            raise ValueError(f"restore_before names no process: {self.restore_before!r}")
        if self.ports and self.port_block is None:
            raise ValueError("a program with ports needs a port_block (unique among all programs)")
        if self.database is not None:
            uri = urlsplit(self.database)
            if uri.scheme not in ("postgresql", "postgres") or uri.hostname not in (None, "127.0.0.1", "localhost"):
                raise ValueError("database: a postgresql:// URI on loopback (127.0.0.1, localhost or a Unix socket)")
        if self.dom_port and self.dom_port not in self.ports:
            raise ValueError(f"dom_port {self.dom_port!r} is not in ports")
        if self.accessibility is not None and self.accessibility.source == "devtools":
            if not self.dom_port:
                raise ValueError("accessibility.source devtools needs a dom_port (a browser program's DevTools)")
            if self.accessibility.env:
                raise ValueError("accessibility.env goes with source atspi (Chromium's tree needs no switch)")
        if self.settle.page_busy and not self.dom_port:
            raise ValueError("settle.page_busy needs a dom_port (a browser program's DevTools)")
        text = self.model_dump_json()
        for var in _VAR.findall(text):
            if var not in known:
                raise ValueError(f"unknown variable ${{{var}}}; known: {', '.join(sorted(known))}")
        return self

    def process(self, name: str) -> Process:
        return next(p for p in self.processes if p.name == name)


def render(text: str, variables: dict[str, str]) -> str:
    return _VAR.sub(lambda m: variables[m.group(1)], text)


def _load(path: Path) -> AppSpec:
    data = read_yaml(path)
    data["folder"] = path.parent
    spec = parse(AppSpec, data, path)
    if spec.name != path.parent.name:
        raise SpecError(path, "name", f"must equal the folder name {path.parent.name!r}")
    return spec


@cache
def _programs(search: tuple[Path, ...]) -> dict[str, AppSpec]:
    files = paths.program_files(search)
    programs = {name: _load(path) for name, path in files.items()}
    blocks: dict[int, str] = {}
    for name, app in programs.items():
        if app.port_block is None:
            continue
        if app.port_block in blocks:
            other = blocks[app.port_block]
            raise SpecError(files[name], "port_block", f"{app.port_block} is taken by {other} ({files[other]})")
        blocks[app.port_block] = name
    return programs


def programs() -> dict[str, AppSpec]:
    """Every program of the search path, by name (loaded and checked once per search path)."""
    return _programs(paths.folders())


def load_app(name: str) -> AppSpec:
    found = programs()
    if name not in found:
        raise SpecError(name, "", f"no such program; known: {', '.join(sorted(found))}")
    return found[name]


def app_names() -> list[str]:
    return sorted(programs())
