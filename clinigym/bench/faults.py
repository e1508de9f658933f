"""Faults injected into a running `clinigym run` from outside, as crashes and operators
cause them (the soak, `clinigym soak`): each finds its target in the run's process tree
and its workers' containers, the way `ps` and `docker ps` would, with no help from the run.

A worker of a pool is a child of the run's process started by multiprocessing; a run with
one process is its own worker. A worker's program runs in the process groups it started
(locally) or in the containers labelled with its pid (Docker); the display is its Xvfb.
"""
from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from clinigym.core.errors import ClinigymError
from clinigym.runtime.procfs import cmdline, comm, stat, tree

DISPLAY_PROGRAMS = {"Xvfb", "openbox"}     # a display's own processes: not the program's


@dataclass
class Target:
    """One worker and what runs its program now (host pids)."""
    worker: int
    backend: str                                   # local or docker
    xvfb: int | None = None
    groups: list[int] = field(default_factory=list)   # the program's process groups
    container: Any = None                          # a docker-py container (Docker backend)


def workers(run: int) -> list[int]:
    """The run's worker processes: its children started by multiprocessing (not its
    resource tracker), or the run itself when it has none."""
    children = [p for p in tree(run) if (st := stat(p)) and st.ppid == run]
    spawned = [p for p in children if "spawn_main" in cmdline(p)]
    return spawned or [run]


def _parts(root: int, skip_groups: set[int]) -> tuple[int | None, list[int]]:
    """Under `root`: the Xvfb pid and the program's process groups (those that are neither
    in `skip_groups` nor a display's)."""
    xvfb, groups, display_groups = None, set(), set()
    for pid in tree(root):
        st = stat(pid)
        if st is None or st.state == "Z":
            continue
        name, pgid = comm(pid), st.pgid
        if name in DISPLAY_PROGRAMS:
            display_groups.add(pgid)
            xvfb = pid if name == "Xvfb" else xvfb
        elif pgid not in skip_groups:
            groups.add(pgid)
    return xvfb, sorted(groups - display_groups)


def in_container(worker: int, container) -> Target:
    """What runs in a worker's container, by host pids."""
    init = int(container.attrs["State"]["Pid"])
    # The container's init and the supervisor under it; what the supervisor runs to
    # completion stays in its group, each process it spawns has a session of its own.
    own = {st.pgid for p in tree(init) if (st := stat(p)) and (p == init or st.ppid == init)}
    xvfb, groups = _parts(init, own)
    return Target(worker, "docker", xvfb, groups, container)


def find_target(worker: int, engine=None) -> Target | None:
    """What runs `worker`'s program now, or None when nothing does (between programs)."""
    if engine is not None:
        from clinigym.runtime.backends.docker import LABEL
        for c in engine.containers.list(filters={"label": f"{LABEL}.owner={worker}"}):
            return in_container(worker, c)
    own = stat(worker)
    if own is None:
        return None
    xvfb, groups = _parts(worker, {own.pgid})
    if xvfb is None and not groups:
        return None
    return Target(worker, "local", xvfb, groups)


class TargetGone(ClinigymError):
    """What a fault was aimed at ended before the fault came (it is tried again later)."""


def _signal(pid: int, sig: int, group: bool) -> None:
    try:
        os.killpg(pid, sig) if group else os.kill(pid, sig)
    except ProcessLookupError:
        raise TargetGone(f"{'process group' if group else 'process'} {pid} has ended") from None


def _continue(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):   # killed meanwhile (the reset that recovers)
        os.killpg(pgid, signal.SIGCONT)


def kill_program(t: Target, rng: random.Random, stop_seconds: float) -> str:
    pgid = rng.choice(t.groups)
    _signal(pgid, signal.SIGKILL, group=True)
    return f"SIGKILL to process group {pgid}"


def kill_display(t: Target, rng: random.Random, stop_seconds: float) -> str:
    assert t.xvfb is not None
    _signal(t.xvfb, signal.SIGKILL, group=False)
    return f"SIGKILL to Xvfb {t.xvfb}"


def kill_container(t: Target, rng: random.Random, stop_seconds: float) -> str:
    from docker.errors import APIError
    try:
        t.container.kill()
    except APIError as exc:     # removed or stopped meanwhile
        raise TargetGone(f"container {t.container.name}: {exc}") from None
    return f"docker kill {t.container.name}"


def stop_program(t: Target, rng: random.Random, stop_seconds: float) -> str:
    """SIGSTOP to a program group, SIGCONT after `stop_seconds` (past its settle timeout)."""
    pgid = rng.choice(t.groups)
    _signal(pgid, signal.SIGSTOP, group=True)
    timer = threading.Timer(stop_seconds, _continue, (pgid,))
    timer.daemon = True
    timer.start()
    return f"SIGSTOP to process group {pgid} for {stop_seconds:g} s"


def kill_worker(t: Target, rng: random.Random, stop_seconds: float) -> str:
    _signal(t.worker, signal.SIGKILL, group=False)
    return f"SIGKILL to worker {t.worker}"


Inject = Callable[[Target, random.Random, float], str]


@dataclass(frozen=True)
class Fault:
    inject: Inject
    applies: Callable[[Target, bool], bool]   # (target, run has a pool) -> whether it can be injected


# The faults, by name. Killing a worker needs a pool: a run of one process is the runner itself.
FAULTS: dict[str, Fault] = {
    "kill-program": Fault(kill_program, lambda t, pool: bool(t.groups)),
    "kill-display": Fault(kill_display, lambda t, pool: t.xvfb is not None),
    "kill-container": Fault(kill_container, lambda t, pool: t.container is not None),
    "stop-program": Fault(stop_program, lambda t, pool: bool(t.groups)),
    "kill-worker": Fault(kill_worker, lambda t, pool: pool),
}
