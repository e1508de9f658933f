"""Accessibility trees of running programs (issue #37): a private AT-SPI bus per display
(`bus.py`) and one reader per source, each producing `clinigym.core.elements.Tree`.

`READERS` maps a program file's ``accessibility.source`` to its reader's factory, which
takes the backend (for the address of its AT-SPI bus, `session.A11ySession`, or its
DevTools client); `NEEDS_BUS` says which sources need the private buses.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from clinigym.core.elements import Caps, Tree

__all__ = ["NEEDS_BUS", "READERS", "Reader"]


class Reader(Protocol):
    source: str

    def read(self, caps: Caps = ..., screen: tuple[int, int] | None = None) -> Tree: ...

    def close(self) -> None: ...


def _atspi(backend: Any) -> Reader:
    from clinigym.runtime.a11y.atspi import AtspiReader
    return AtspiReader(backend.a11y.bus.a11y, backend.app.accessibility.walk)


def _devtools(backend: Any) -> Reader:
    from clinigym.runtime.a11y.devtools_ax import DevToolsAxReader
    return DevToolsAxReader(backend.dom_client)


READERS: dict[str, Callable[[Any], Reader]] = {"atspi": _atspi, "devtools": _devtools}
NEEDS_BUS = frozenset({"atspi"})
