"""A virtual X display: Xvfb + a window manager, screenshots (mss), input (XTest).

The screenshot is the observation; all coordinates here are screen pixels of
this display (the environment maps observation pixels to them).
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import mss
import numpy as np
from Xlib import XK, X
from Xlib import display as xdisplay
from Xlib.error import XError
from Xlib.ext import xtest

from clinigym.core.errors import InvalidAction, ProgramDied, ProgramError
from clinigym.core.screen import Frame, changed_pixels
from clinigym.runtime.busy import BusyMeter, Hold
from clinigym.runtime.damage import DamageUnavailable, DamageWatch, ScreenTracker, ServerClosed, settle_on_damage
from clinigym.runtime.polling import settle_by_polling
from clinigym.runtime.screen_size import MAX_SCREEN, MIN_SCREEN, Geometry
from clinigym.runtime.slots import mark_owner
from clinigym.runtime.waiting import wait_for

__all__ = ["MAX_SCREEN", "MIN_SCREEN", "DisplaySession", "Frame", "Geometry", "InputError", "changed_pixels"]

KEY_ALIASES = {
    "ctrl": "Control_L", "control": "Control_L", "shift": "Shift_L", "alt": "Alt_L",
    "super": "Super_L", "meta": "Super_L", "win": "Super_L", "cmd": "Super_L",
    "enter": "Return", "return": "Return", "esc": "Escape", "escape": "Escape",
    "tab": "Tab", "space": "space", "backspace": "BackSpace", "delete": "Delete",
    "del": "Delete", "up": "Up", "down": "Down", "left": "Left", "right": "Right",
    "home": "Home", "end": "End", "pageup": "Prior", "pagedown": "Next",
    "insert": "Insert",
}
BUTTONS = {"left": 1, "middle": 2, "right": 3}
# How a settled screen is told: from the X server's damage reports, or by grabbing the
# whole screen every 25 ms (the fallback for a server without DAMAGE, and the baseline).
SETTLE_RULES = ("damage", "polling")


class InputError(InvalidAction):
    """An input the display cannot produce (unknown key, character not on the keymap)."""


def server_answers(number: int, x11_dir: Path = Path("/tmp/.X11-unix")) -> bool:
    """Whether an X server listens on display `number`: on the abstract socket (shared by
    every container on the host network) or on the socket file."""
    for address in (f"\0/tmp/.X11-unix/X{number}", str(x11_dir / f"X{number}")):
        with socket.socket(socket.AF_UNIX) as s:
            try:
                s.connect(address)
                return True
            except OSError:
                pass
    return False


def _on_the_server(method):
    """An X call whose failure, when the X server no longer accepts connections, is the
    display's death (ProgramDied, as a program's); Xlib and mss otherwise fail each in
    its own way (a closed connection, an assertion)."""
    @functools.wraps(method)
    def call(self: DisplaySession, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except ServerClosed as exc:   # only a server's death closes its clients' connections
            raise self.gone(str(exc)) from exc
        except ProgramError:
            raise
        except Exception as exc:
            if self.answers():
                raise
            raise self.gone(f"{type(exc).__name__}: {exc}") from exc
    return call


class DisplaySession:
    """Owns one Xvfb server and its window manager; screenshots and XTest input."""

    def __init__(self, geometry: Geometry = Geometry(), window_manager: str | None = "openbox",
                 number: int | None = None, settle_rule: str | None = None):
        """Starts Xvfb and the window manager; with `number`, attaches to a display that
        runs elsewhere (a container) and whose window manager that side starts.
        `settle_rule` (else $CLINIGYM_SETTLE, else damage) is one of SETTLE_RULES."""
        rule = settle_rule or os.environ.get("CLINIGYM_SETTLE") or "damage"
        if rule not in SETTLE_RULES:
            raise ValueError(f"settle rule {rule!r}: expected one of {', '.join(SETTLE_RULES)}")
        self.geometry = geometry
        self._procs: list[subprocess.Popen] = []
        self._workdir = Path(tempfile.mkdtemp(prefix="clinigym-display-"))
        self._x = self._grabber = self._damage = None
        self.number: int | None = number
        self.name = f":{number}"
        try:
            self.settle_rule = self._start(window_manager, rule)
        except Exception as exc:   # nothing is left half-started; a server that went is its death
            self.close()
            if isinstance(exc, ProgramError) or self.number is None or self.answers():
                raise
            raise self.gone(f"{type(exc).__name__}: {exc}") from exc

    def _start(self, window_manager: str | None, rule: str) -> str:
        """Start (or attach to) the server and the window manager; the settle rule it allows."""
        attached = self.number is not None
        if not attached:
            self.number = self._start_xvfb()
            self.name = f":{self.number}"
        self._x = xdisplay.Display(self.name)
        self._root = self._x.screen().root
        self._grabber = mss.MSS(display=self.name)
        g = self.geometry
        self._monitor = {"left": 0, "top": 0, "width": g.width, "height": g.height}
        if window_manager and not attached:
            self._start_window_manager(window_manager)
        self._wait_window_manager(window_manager)
        try:
            self._damage = DamageWatch(self.name)
        except DamageUnavailable:
            return "polling"
        return rule

    # -- lifecycle -----------------------------------------------------------------
    def _start_xvfb(self) -> int:
        mark_owner()   # the server and window manager are this process's: they end with it
        # -displayfd lets Xvfb pick a free display number itself: no races between
        # sessions started at the same time.
        read_fd, write_fd = os.pipe()
        g = self.geometry
        proc = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", f"{g.width}x{g.height}x{g.depth}",
             "-nolisten", "tcp", "-noreset", "+extension", "XTEST"],
            pass_fds=(write_fd,), stdout=subprocess.DEVNULL,
            stderr=open(self._workdir / "xvfb.log", "wb"), start_new_session=True)
        os.close(write_fd)
        self._procs.append(proc)
        with os.fdopen(read_fd) as pipe:
            number = pipe.readline().strip()
        if not number:
            self.close()
            raise ProgramError(f"Xvfb did not start: {(self._workdir / 'xvfb.log').read_text()[-500:]}")
        return int(number)

    def _start_window_manager(self, command: str) -> None:
        proc = subprocess.Popen(
            [command], env=self.env(), stdout=subprocess.DEVNULL,
            stderr=open(self._workdir / "wm.log", "wb"), start_new_session=True)
        self._procs.append(proc)

    def _wait_window_manager(self, command: str | None) -> None:
        if not command:
            return
        atom = self._x.intern_atom("_NET_SUPPORTING_WM_CHECK")
        wait_for(lambda: self._root.get_full_property(atom, X.AnyPropertyType) is not None,
                 timeout=10, what=f"window manager {command} on {self.name}")

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["DISPLAY"] = self.name
        env.pop("WAYLAND_DISPLAY", None)
        return env

    def process_groups(self) -> set[int]:
        return {p.pid for p in self._procs if p.poll() is None}

    def gone(self, detail: str) -> ProgramDied:
        """The display's death, in the words every path uses."""
        return ProgramDied(f"the X display is gone ({self.name}: {detail})")

    def alive(self) -> bool:
        return all(p.poll() is None for p in self._procs[:1])

    def answers(self) -> bool:
        """Whether the X server accepts connections (the local one, or a container's)."""
        return self.number is not None and server_answers(self.number)

    def close(self) -> None:
        for proc in reversed(self._procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        self._procs.clear()
        if self._damage:
            self._damage.close()
        for conn in (self._grabber, self._x):
            try:
                if conn is not None:
                    conn.close()
            except Exception:  # the server may be gone already; nothing is left to release
                pass
        shutil.rmtree(self._workdir, ignore_errors=True)

    # -- windows ---------------------------------------------------------------------
    @_on_the_server
    def window_titles(self) -> list[str]:
        """Titles of the managed top-level windows (EWMH client list)."""
        atom = self._x.intern_atom("_NET_CLIENT_LIST")
        prop = self._root.get_full_property(atom, X.AnyPropertyType)
        titles = []
        for wid in (prop.value if prop else []):
            try:
                win = self._x.create_resource_object("window", wid)
                name = win.get_full_property(self._x.intern_atom("_NET_WM_NAME"), 0)
                title = name.value if name else win.get_wm_name()
            except XError:
                continue  # window vanished meanwhile
            if isinstance(title, bytes):
                title = title.decode("utf-8", "replace")
            titles.append(title or "")
        return titles

    def has_window(self, pattern: str) -> bool:
        rx = re.compile(pattern)
        return any(rx.search(t) for t in self.window_titles())

    # -- screenshots ---------------------------------------------------------------
    @_on_the_server
    def grab(self) -> Frame:
        shot = self._grabber.grab(self._monitor)
        bgra = np.frombuffer(shot.raw, dtype=np.uint8).reshape(shot.height, shot.width, 4)
        return Frame(bgra=bgra, t=time.monotonic())

    @_on_the_server
    def grab_area(self, x: int, y: int, width: int, height: int) -> np.ndarray:
        """One area of the screen, one uint32 per pixel (as `Frame.raw`)."""
        shot = self._grabber.grab({"left": x, "top": y, "width": width, "height": height})
        return np.frombuffer(shot.raw, dtype=np.uint32).reshape(shot.height, shot.width)

    @_on_the_server
    def tracker(self, since: Frame | None = None, min_changed: int = 40) -> ScreenTracker | None:
        """The screen's changes from `since` (else from now), from damage reports; None
        on a server without DAMAGE."""
        if self._damage is None:
            return None
        base = (since or self.grab()).raw.copy()
        return ScreenTracker(self._damage, self.grab_area, base, min_changed)

    @_on_the_server
    def wait_settled(self, quiet: float = 0.25, timeout: float = 10.0, min_changed: int = 40,
                     since: Frame | None = None, busy: BusyMeter | None = None,
                     hold: Hold | None = None) -> tuple[Frame, bool]:
        """Wait until nothing changed more than `min_changed` pixels for `quiet` seconds
        (a blinking caret does not count), by this display's settle rule; with `busy`
        (damage rule only), for its shorter window while the program is idle; never while
        `hold` says drawing is still owed. Returns the last frame and whether the screen
        settled before `timeout`."""
        tracker = self.tracker(since, min_changed) if self.settle_rule == "damage" else None
        if tracker is not None:
            return settle_on_damage(tracker, self.grab, quiet, timeout, busy, hold)
        return settle_by_polling(self.grab, quiet, timeout, min_changed, since, hold)

    # -- input -----------------------------------------------------------------------
    def _sync(self) -> None:
        self._x.sync()

    @_on_the_server
    def move(self, x: int, y: int) -> None:
        xtest.fake_input(self._x, X.MotionNotify, x=int(x), y=int(y))
        self._sync()

    @_on_the_server
    def press(self, button: str = "left") -> None:
        xtest.fake_input(self._x, X.ButtonPress, BUTTONS[button])
        self._sync()

    @_on_the_server
    def release(self, button: str = "left") -> None:
        xtest.fake_input(self._x, X.ButtonRelease, BUTTONS[button])
        self._sync()

    @_on_the_server
    def click(self, x: int, y: int, button: str = "left", count: int = 1) -> None:
        """Clicks paced like a person's (Java's tree, for one, ignores a double click
        whose four events arrive at the same instant)."""
        self.move(x, y)
        for i in range(count):
            if i:
                time.sleep(0.06)
            self.press(button)
            time.sleep(0.02)
            self.release(button)

    @_on_the_server
    def drag(self, x1: int, y1: int, x2: int, y2: int, steps: int = 10) -> None:
        """Press at the start, move in small steps (toolkits ignore a single jump), release;
        paced like a hand, so that a browser's drag-and-drop session starts and ends."""
        self.move(x1, y1)
        self.press()
        time.sleep(0.05)      # the press is seen before the pointer moves (a drag, not a jump)
        # Past the drag threshold, then a pause: Chromium starts its drag session (a pointer
        # grab) here, and motion that arrives before it is lost on a busy machine.
        nx, ny = x1 + (4 if x2 >= x1 else -4), y1
        self.move(nx, ny)
        time.sleep(0.15)
        for i in range(1, steps + 1):
            self.move(nx + (x2 - nx) * i // steps, ny + (y2 - ny) * i // steps)
            time.sleep(0.02)  # toolkits coalesce motion events that arrive at once
        # Rest on the end with small real moves (a move to the same place sends no event):
        # a drop lands on the element the last drag-over reached.
        for dx in (1, 0, 1, 0):
            self.move(x2 + dx, y2)
            time.sleep(0.05)
        self.release()

    @_on_the_server
    def scroll(self, x: int, y: int, dy: int = 0, dx: int = 0) -> None:
        self.move(x, y)
        for button, amount in ((5 if dy > 0 else 4, dy), (7 if dx > 0 else 6, dx)):
            for _ in range(abs(amount)):
                xtest.fake_input(self._x, X.ButtonPress, button)
                xtest.fake_input(self._x, X.ButtonRelease, button)
        self._sync()

    @_on_the_server
    def perform(self, kind: str, point=None, end=None, text: str | None = None, keys: str | None = None,
                scroll: tuple[int, int] = (0, 0)) -> None:
        """One action of the action space, in screen pixels. A `type` with a point clicks
        there first; without one it types at the focus."""
        if kind not in _PERFORM:
            raise InputError(f"unknown action type {kind!r}")
        _PERFORM[kind](self, point, end, text, keys, scroll)

    @_on_the_server
    def pointer(self) -> tuple[int, int]:
        p = self._root.query_pointer()
        return p.root_x, p.root_y

    def _keycode(self, keysym: int) -> tuple[int, bool]:
        """Keycode for a keysym and whether Shift is needed to produce it."""
        for code, index in self._x.keysym_to_keycodes(keysym):
            if index in (0, 1):
                return code, index == 1
        raise InputError(f"no key produces keysym {keysym:#x} on this keymap")

    @staticmethod
    def _keysym(name: str) -> int:
        name = KEY_ALIASES.get(name.lower(), name)
        keysym = XK.string_to_keysym(name)
        if keysym == 0 and len(name) == 1:
            keysym = XK.string_to_keysym(name.lower()) if name.isalpha() else ord(name)
        if keysym == 0:
            raise InputError(f"unknown key name {name!r}")
        return keysym

    @_on_the_server
    def key(self, combo: str) -> None:
        """Press a key combination such as 'ctrl+shift+t', 'Return', 'alt+F4'."""
        names = [n for n in combo.replace(" ", "").split("+") if n]
        if not names:
            raise InputError(f"empty key combination {combo!r}")
        codes = [self._keycode(self._keysym(n))[0] for n in names]
        for code in codes:
            xtest.fake_input(self._x, X.KeyPress, code)
        for code in reversed(codes):
            xtest.fake_input(self._x, X.KeyRelease, code)
        self._sync()

    @_on_the_server
    def type_text(self, text: str) -> None:
        shift = self._x.keysym_to_keycode(XK.string_to_keysym("Shift_L"))
        plan = []
        for ch in text:
            name = {"\n": "Return", "\t": "Tab", " ": "space"}.get(ch)
            keysym = XK.string_to_keysym(name) if name else _char_keysym(ch)
            plan.append(self._keycode(keysym))  # check every character before typing any
        for code, needs_shift in plan:
            if needs_shift:
                xtest.fake_input(self._x, X.KeyPress, shift)
            xtest.fake_input(self._x, X.KeyPress, code)
            xtest.fake_input(self._x, X.KeyRelease, code)
            if needs_shift:
                xtest.fake_input(self._x, X.KeyRelease, shift)
        self._sync()

def _char_keysym(ch: str) -> int:
    keysym = XK.string_to_keysym(ch)
    if keysym == 0:
        keysym = ord(ch) if ord(ch) < 0x100 else 0x01000000 | ord(ch)
    return keysym


def _type(d: DisplaySession, point, end, text, keys, scroll) -> None:
    if point is not None:
        d.click(*point)
    d.type_text(text)


# How the display produces each action type of `clinigym.core.actions.ACTIONS`.
_PERFORM = {
    "click": lambda d, p, e, t, k, s: d.click(*p),
    "double_click": lambda d, p, e, t, k, s: d.click(*p, count=2),
    "right_click": lambda d, p, e, t, k, s: d.click(*p, button="right"),
    "drag": lambda d, p, e, t, k, s: d.drag(*p, *e),
    "hover": lambda d, p, e, t, k, s: d.move(*p),
    "type": _type,
    "scroll": lambda d, p, e, t, k, s: d.scroll(*p, dy=s[1], dx=s[0]),
    "key": lambda d, p, e, t, k, s: d.key(k),
}
