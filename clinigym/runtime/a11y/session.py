"""A backend's accessibility: what it adds to the programs' environment, its private buses
and its reader. Off unless a run asks for it (`Backend.accessibility`), so that runs without
it start the programs exactly as before (``NO_AT_BRIDGE=1``, no bus)."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from clinigym.core.elements import Caps, Selector, Tree
from clinigym.core.geometry import Box
from clinigym.runtime.a11y import NEEDS_BUS, READERS, Reader

if TYPE_CHECKING:
    from clinigym.runtime.a11y.bus import A11yBus

__all__ = ["A11ySession"]


class A11ySession:
    def __init__(self, backend: Any):
        self.backend = backend
        self.bus: A11yBus | None = None
        self._reader: Reader | None = None
        # A reset's restore commands get their environment on a thread of their own while the
        # first process starts: two buses on one folder took each other's sockets and processes.
        self._starting = threading.Lock()

    def apply(self, env: dict[str, str], on: bool) -> None:
        """With accessibility `on`: the bridge allowed, the toolkit's switches, and the private
        buses (started on first use, with the display's first process), last: they replace a
        process's own (GNU Health's client says ``DBUS_SESSION_BUS_ADDRESS=disabled:``)."""
        spec = self.backend.app.accessibility
        if not on or spec is None or spec.source not in NEEDS_BUS:
            return
        with self._starting:
            if self.bus is None:
                from clinigym.runtime.a11y.bus import A11yBus  # D-Bus (jeepney) only for runs that ask
                self.bus = A11yBus(self.backend.workdir / "a11y")
        env.pop("NO_AT_BRIDGE", None)
        env.update(spec.env)
        env.update(self.bus.env())

    def read(self, on: bool, caps: Caps) -> Tree:
        app = self.backend.app
        if app.accessibility is None:
            raise ValueError(f"{app.name}: its program file has no `accessibility:` block (no tree to read)")
        if not on:
            raise ValueError(f"{app.name}: accessibility is off; ask for it before the reset "
                             f"(make_backend(..., accessibility=True))")
        if app.accessibility.source in NEEDS_BUS and self.bus is None:
            raise ValueError(f"{app.name}: the program started without its accessibility bridge; turn "
                             f"accessibility on before the reset")
        if self._reader is None:
            self._reader = READERS[app.accessibility.source](self.backend)
        g = self.backend.geometry
        return self._reader.read(caps, (g.width, g.height))

    def locate(self, on: bool, selector: Selector, caps: Caps, row: bool = False) -> Box | None:
        """The screen box of the one element `selector` names now (with `row`: of its row,
        across the table holding it); None when none is shown (yet); a ValueError naming them
        when several are, since a target must be one."""
        tree = self.read(on, caps)
        found = tree.find(selector)
        if len(found) > 1:
            listed = "; ".join(f"{e.path} {e.name!r}" for e in found[:5])
            raise ValueError(f"{self.backend.app.name}: the selector {selector} names {len(found)} elements "
                             f"({listed}); narrow it with within or index")
        if not found or not row:
            return found[0].box if found else None
        box = tree.row(found[0])
        if box is None:
            raise ValueError(f"{self.backend.app.name}: {found[0].path} {found[0].name!r} is in no table or list: "
                             f"`row` targets a cell's row")
        return box

    def close(self) -> None:
        """The reader's connection and the buses, with what they started."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self.bus is not None:
            self.bus.close()
            self.bus = None
