"""What a process that owned programs left when it ended, and the guardian that removes it.

A process becomes an owner the first time it starts something (`slots.mark_owner`): its
pid goes into the environment of every process it starts, the owner file of its folders,
the label of its containers, the lock of its displays. `sweep` removes what owners left:
first their programs' close commands (what lives outside the work folder: GNU Health's
databases), then containers, processes, display locks and folders.

`slots.mark_owner()` starts, once per owner, this small guardian process (`python .../guardian.py PID`,
by its path: `-m` would import the package, 1 s of CPU and 80 MB): it waits for the owner to end, however it ends (an
exception, `sys.exit`, a signal, SIGKILL: it watches a pidfd, so nothing the owner does or
fails to do matters), then sweeps what the owner left and exits. It runs in a session of
its own (a terminal's Ctrl-C does not reach it) and carries no owner mark (no sweep
kills it). An owner that closed everything leaves nothing to do: the sweep only looks.
Until then it runs only the standard library (clinigym is imported by what it calls).
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clinigym.runtime.slots import CloseNote

__all__ = ["close_commands", "sweep"]

SWEEP_LIMIT = 180      # seconds a guardian may sweep (close commands 60 s each, kills 8 s, containers)
CLOSE_TIMEOUT = 60     # per close command, as `Backend.close` allows


def sweep(owners: set[int] | None = None, all_containers: bool = False, containers: bool = True) -> list[str]:
    """Remove what `owners` (processes that are gone or stopping) left, or without `owners`
    what every run whose process is gone left; with `all_containers`, every clinigym
    container too; `containers=False` leaves the Docker engine out (a run that used none).
    Returns what was removed (close commands run, container names, processes, paths)."""
    from clinigym.runtime.backends.docker import cleanup as remove_containers
    from clinigym.runtime.backends.docker import remove_stale_locks
    from clinigym.runtime.backends.local import kill_owned
    from clinigym.runtime.images import ImageError
    from clinigym.runtime.slots import close_left, remove_workdirs
    # The close commands first: a container's run in it, and the processes they wait for (a
    # database copy still being made) finish what they do rather than being cut short.
    removed = close_left(owners, close_commands)
    if containers:
        try:
            removed += remove_containers(all_containers, owners=owners)
        except (ImportError, ImageError):   # no Docker SDK or no engine here: no containers either
            pass
    removed += kill_owned(owners)
    removed += remove_stale_locks(owners)
    removed += remove_workdirs(owners)
    return removed


def close_commands(note: CloseNote) -> str:
    """Run a dead program's close commands where its backend ran them: in its container
    while that answers, else on this machine; what happened."""
    from clinigym.runtime.backends.docker import SupervisorError, call_supervisor
    from clinigym.runtime.slots import OWNER_ENV
    failed = []
    for argv in note.commands:
        if note.supervisor:
            try:
                reply = call_supervisor(note.supervisor, "the container", "run", CLOSE_TIMEOUT + 10, argv=argv,
                                        cwd=note.cwd, env=note.env, timeout=CLOSE_TIMEOUT)
                if reply["returncode"]:
                    failed.append(f"{argv[-3:]} exited with {reply['returncode']}")
                continue
            except SupervisorError:   # the container is gone: here, with what this machine has
                pass
        env = {**{k: v for k, v in os.environ.items() if k != OWNER_ENV}, **note.env}
        try:
            done = subprocess.run(argv, cwd=note.cwd if Path(note.cwd).is_dir() else "/", env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=CLOSE_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            failed.append(f"{argv[-3:]}: {exc}")
            continue
        if done.returncode:
            failed.append(f"{argv[-3:]} exited with {done.returncode}: {done.stderr.decode(errors='replace')[-300:]}")
    return f"close commands failed: {'; '.join(failed)}" if failed else f"ran {len(note.commands)} close command(s)"


def wait_for_end(pid: int) -> None:
    """Until process `pid` has ended (at once if it has). Only a parent's pid is exact: a
    process whose parent has gone was adopted, and the pid may be another's by now."""
    if os.getppid() != pid:
        return
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        watch = select.poll()
        watch.register(fd, select.POLLIN)   # readable once the process has ended
        while not watch.poll():
            pass
    finally:
        os.close(fd)


def main(argv: list[str]) -> None:
    owner = int(argv[0])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    wait_for_end(owner)
    signal.alarm(SWEEP_LIMIT)   # bounded: a sweep that hangs ends with the guardian
    sweep({owner})


if __name__ == "__main__":
    # Run by its path: the package's folder, not this file's, is where imports start (the
    # owner's clinigym, wherever it was found).
    sys.path[0] = str(Path(__file__).resolve().parents[2])
    main(sys.argv[1:])
