"""A small D-Bus client on jeepney (pure Python): single calls, and pipelined batches.

A read of an accessibility tree is thousands of small calls, each answered by the program's
main thread. One at a time, the round trips dominate (DICOMscope: 1.3-2.4 s for its tree);
sent all at once and matched by reply serial (`many`), one level of the tree costs one round
trip. Every call has a deadline: a program that stops answering ends the read, not the run.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from jeepney import DBusAddress, MessageType, new_method_call
from jeepney.io.blocking import DBusConnection, open_dbus_connection
from jeepney.low_level import HeaderFields

from clinigym.core.errors import ProgramError

__all__ = ["Call", "Connection", "DBusError", "PROPERTIES"]

PROPERTIES = "org.freedesktop.DBus.Properties"
BATCH = 2048   # calls in flight at once: well under the bus's limit of pending replies


class DBusError(ProgramError):
    """A D-Bus call failed, or no reply came before the deadline."""


@dataclass(frozen=True)
class Call:
    bus: str          # the peer's unique or well-known name
    path: str
    interface: str
    method: str
    signature: str | None = None
    body: tuple[Any, ...] = ()

    @classmethod
    def prop(cls, bus: str, path: str, interface: str, name: str) -> Call:
        return cls(bus, path, PROPERTIES, "Get", "ss", (interface, name))

    @classmethod
    def props(cls, bus: str, path: str, interface: str) -> Call:
        """All of an interface's properties, as {name: (signature, value)}."""
        return cls(bus, path, PROPERTIES, "GetAll", "s", (interface,))


class Connection:
    """One connection to a bus (`address` as D-Bus writes it: ``unix:path=...``)."""

    def __init__(self, address: str, timeout: float = 2.0):
        try:
            self._conn: DBusConnection = open_dbus_connection(address, auth_timeout=timeout)
        except (OSError, ValueError) as exc:
            raise DBusError(f"D-Bus {address}: {type(exc).__name__}: {exc}") from None

    def call(self, call: Call, timeout: float = 2.0) -> tuple[Any, ...]:
        """One call's reply body; a D-Bus error or no reply in time raises `DBusError`."""
        reply, late = self.many([call], time.monotonic() + timeout)
        if late:
            raise DBusError(f"D-Bus {call.interface}.{call.method} on {call.bus}{call.path}: no reply in {timeout:g} s")
        if reply[0] is None:
            raise DBusError(f"D-Bus {call.interface}.{call.method} on {call.bus}{call.path}: error reply")
        return reply[0]

    def many(self, calls: list[Call], deadline: float) -> tuple[list[tuple[Any, ...] | None], bool]:
        """Send every call, then collect the replies by serial: each call's reply body (None
        for an error reply or one still missing at `deadline`, `time.monotonic()` time), and
        whether the deadline cut the batch short. Replies that come later are dropped."""
        out: list[tuple[Any, ...] | None] = [None] * len(calls)
        for start in range(0, len(calls), BATCH):
            if self._batch(calls, start, min(len(calls), start + BATCH), out, deadline):
                return out, True
        return out, False

    def _batch(self, calls: list[Call], start: int, end: int, out: list[tuple[Any, ...] | None],
               deadline: float) -> bool:
        waiting: dict[int, int] = {}
        try:
            for i in range(start, end):
                c = calls[i]
                serial = next(self._conn.outgoing_serial)
                self._conn.send(new_method_call(DBusAddress(c.path, c.bus, c.interface), c.method,
                                                c.signature, c.body), serial=serial)
                waiting[serial] = i
            while waiting:
                left = deadline - time.monotonic()
                if left <= 0:
                    return True
                msg = self._conn.receive(timeout=left)
                i = waiting.pop(msg.header.fields.get(HeaderFields.reply_serial, -1), -1)
                if i >= 0 and msg.header.message_type == MessageType.method_return:
                    out[i] = msg.body
        except TimeoutError:
            return True
        except (OSError, ValueError) as exc:
            raise DBusError(f"D-Bus connection lost: {type(exc).__name__}: {exc}") from None
        return False

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
