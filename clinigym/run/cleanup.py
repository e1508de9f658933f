"""Removing what runs left behind: their containers, their processes on this machine (and
the display folders those wrote to), stale display locks and their work folders.

A run's things are told by their owner's pid: the label of its containers, the mark every
process it starts inherits (`slots.OWNER_ENV`), the owner file of its work folders, the
pid in a display lock. `clinigym cleanup` removes those whose owner is gone; a pool
removes those of its workers when they end; a stopped `clinigym run` those of its own.
"""
from __future__ import annotations

from clinigym.runtime.backends.docker import cleanup as remove_containers
from clinigym.runtime.backends.docker import remove_stale_locks
from clinigym.runtime.backends.local import kill_owned
from clinigym.runtime.images import ImageError
from clinigym.runtime.slots import remove_workdirs


def sweep(owners: set[int] | None = None, all_containers: bool = False, containers: bool = True) -> list[str]:
    """Remove what `owners` (processes that are gone or stopping) left, or without `owners`
    what every run whose process is gone left; with `all_containers`, every clinigym
    container too; `containers=False` leaves the Docker engine out (a run that used none).
    Returns what was removed (container names, processes, paths)."""
    removed: list[str] = []
    if containers:
        try:
            removed += remove_containers(all_containers, owners=owners)
        except (ImportError, ImageError):   # no Docker SDK or no engine here: no containers either
            pass
    removed += kill_owned(owners)
    removed += remove_stale_locks(owners)
    removed += remove_workdirs(owners)
    return removed
