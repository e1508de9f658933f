"""Removing what runs left behind: their programs' databases, their containers, their
processes on this machine (and the display folders those wrote to), stale display locks
and their folders.

A run's things are told by their owner's pid: the label of its containers, the mark every
process it starts inherits (`slots.OWNER_ENV`), the owner file of its folders, the
pid in a display lock. `clinigym cleanup` removes those whose owner is gone; a pool
removes those of its workers when they end; a stopped `clinigym run` those of its own; and
every owner's guardian those of its owner once it has ended (`clinigym.runtime.guardian`,
where the sweep lives: the guardian, of the runtime layer, runs it).
"""
from __future__ import annotations

from clinigym.runtime.guardian import sweep

__all__ = ["sweep"]
