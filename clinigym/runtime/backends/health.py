"""How a program's processes are, and why a program is not running (`Backend.dead()`)."""
from __future__ import annotations

import signal
from typing import NamedTuple


class Health(NamedTuple):
    display_gone: str | None             # why the display is gone, or None
    exits: dict[str, int | None]         # every process: its exit status, None while it runs
    stopped: list[str]                   # processes with a process stopped by a signal (state T)


# Deaths no click or key of an agent can cause: killed by SIGKILL (the kernel's OOM killer, an
# operator, a lost container) or SIGTERM, as Popen reports them (-N) or as shells and the JVM
# do (128 + N). Any other exit (a status, SIGSEGV, SIGABRT, a clean quit) is the program's
# answer to what it was sent: the agent's.
KILLED = {code for sig in (signal.SIGKILL, signal.SIGTERM) for code in (-sig, 128 + sig)}


class Death(str):
    """Why the program is not running (`Backend.dead()`; a str, as recorded), and whether
    the infrastructure ended it (its display or container gone, a process killed or stopped
    from outside) rather than the agent's actions."""
    infrastructure: bool

    def __new__(cls, reason: str, infrastructure: bool) -> Death:
        death = super().__new__(cls, reason)
        death.infrastructure = infrastructure
        return death
