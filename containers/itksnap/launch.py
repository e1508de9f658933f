"""Start ITK-SNAP with its main window maximized, so every run has the same geometry.

ITK-SNAP 3.6 sizes its main window itself (874x700, about 35 px from the left,
width following the image's aspect ratio) and has no geometry option; Qt's own
`-geometry` is undone by the program right after the window is shown. This
launcher runs the program as its child and follows the new top-level windows
(CreateNotify, PropertyNotify) until the program's main window, its first window
of type NORMAL, appears.

Qt creates that window some 10-20 ms before it maps it. The launcher puts the two
EWMH maximized states in the window's _NET_WM_STATE then; Qt adds its own states to
the property when it shows the window (it does not replace them), so the window
manager maps the window maximized. Maximizing a window that is already shown (an
EWMH client message) is not good enough: the frame changes under Qt, which in
about one start in twenty keeps the border of the unmaximized frame, and every
dialog it centres then lands 9 px right and 20 px lower than in the other runs.
So when the launcher comes too late (its write fell between Qt's reading and
writing the property, or the window manager had read it already), it kills the
program and starts it again (at most three times; then it maximizes the shown
window after all). Measured: one start in a hundred or fewer.

Then it waits for the program and exits with its status, so a crash is seen as
the program's exit. It runs inside the container on Debian's python3 (standard
library only): a minimal X11 client speaking the core protocol on the display's
Unix socket.

Usage: python3 launch.py COMMAND [ARGS...]
"""
import os
import select
import socket
import struct
import subprocess
import sys
import time

WAIT = 60.0   # seconds to wait for the window; the host's readiness timeout bounds the rest
MAXIMIZED = ("_NET_WM_STATE_MAXIMIZED_VERT", "_NET_WM_STATE_MAXIMIZED_HORZ")


def _pad(n):
    return (4 - n % 4) % 4


class X11:
    """Just enough of the core protocol: atoms, properties, the window tree, SendEvent."""

    def __init__(self, display):
        number = display.split(":", 1)[1].split(".", 1)[0]
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect("/tmp/.X11-unix/X" + number)
        self.sock.sendall(struct.pack("<BxHHHHxx", 0x6C, 11, 0, 0, 0))
        head = self._read(8)
        if head[0] != 1:
            raise OSError("X server refused the connection: %r" % self._read(head[1]))
        data = self._read(struct.unpack("<H", head[6:8])[0] * 4)
        vendor_len, = struct.unpack("<H", data[16:18])
        formats = data[21]
        offset = 32 + vendor_len + _pad(vendor_len) + 8 * formats
        self.root, = struct.unpack("<I", data[offset:offset + 4])
        self.screen = struct.unpack("<HH", data[offset + 20:offset + 24])   # width, height in pixels
        self.atoms = {}
        self.events = []   # events read while waiting for a reply

    def _read(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise OSError("X server closed the connection")
            buf += chunk
        return buf

    def _reply(self):
        """The next reply (None for an error, e.g. a window that vanished); events on the way
        are kept for `event()`."""
        while True:
            head = self._read(32)
            if head[0] == 0:
                return None
            if head[0] == 1:
                extra, = struct.unpack("<I", head[4:8])
                return head + self._read(extra * 4)
            self.events.append(head)

    def event(self, timeout):
        """The next event (32 bytes), or None after `timeout` seconds."""
        while not self.events:
            if not select.select([self.sock], [], [], timeout)[0]:
                return None
            head = self._read(32)
            if head[0] == 1:   # a reply nobody waits for (none are sent without waiting)
                self._read(struct.unpack("<I", head[4:8])[0] * 4)
            elif head[0] != 0:
                self.events.append(head)
        return self.events.pop(0)

    def select(self, window, mask):
        """ChangeWindowAttributes: the events this client gets for the window."""
        self.sock.sendall(struct.pack("<BxHIII", 2, 4, window, 1 << 11, mask))

    def atom(self, name):
        if name not in self.atoms:
            raw = name.encode()
            self.sock.sendall(struct.pack("<BBHHxx", 16, 0, 2 + (len(raw) + _pad(len(raw))) // 4, len(raw))
                              + raw + b"\0" * _pad(len(raw)))
            self.atoms[name] = struct.unpack("<I", self._reply()[8:12])[0]
        return self.atoms[name]

    def cardinals(self, window, prop):
        """A 32-bit property as a list of integers ([] when absent or the window is gone)."""
        self.sock.sendall(struct.pack("<BBHIIIII", 20, 0, 6, window, self.atom(prop), 0, 0, 1024))
        reply = self._reply()
        if reply is None or reply[1] != 32:
            return []
        count, = struct.unpack("<I", reply[16:20])
        return list(struct.unpack("<%dI" % count, reply[32:32 + 4 * count]))

    def size(self, window):
        """(width, height) of a window, (0, 0) when it is gone."""
        self.sock.sendall(struct.pack("<BxHI", 14, 2, window))
        reply = self._reply()
        return struct.unpack("<HH", reply[16:20]) if reply else (0, 0)

    def children(self, window):
        self.sock.sendall(struct.pack("<BxHI", 15, 2, window))
        reply = self._reply()
        if reply is None:
            return []
        count, = struct.unpack("<H", reply[16:18])
        return list(struct.unpack("<%dI" % count, reply[32:32 + 4 * count]))

    def set_atoms(self, window, prop, names):
        """Replace an ATOM[] property (then a round trip, so it is set when this returns)."""
        atoms = [self.atom(n) for n in names]
        self.sock.sendall(struct.pack("<BBHIIIBxxxI", 18, 0, 6 + len(atoms), window, self.atom(prop),
                                      4, 32, len(atoms)) + struct.pack("<%dI" % len(atoms), *atoms))
        self.cardinals(window, prop)

    def maximize(self, window):
        """Ask the window manager to maximize a managed window (EWMH client message)."""
        atoms = [self.atom(n) for n in MAXIMIZED]
        event = struct.pack("<BBHII5I", 33, 32, 0, window, self.atom("_NET_WM_STATE"), 1, *atoms, 1, 0)
        mask = (1 << 19) | (1 << 20)   # SubstructureNotify | SubstructureRedirect
        self.sock.sendall(struct.pack("<BBHII", 25, 0, 11, self.root, mask) + event)
        self.cardinals(self.root, "_NET_CLIENT_LIST")   # a round trip


CREATE_NOTIFY, PROPERTY_NOTIFY = 16, 28
SUBSTRUCTURE_NOTIFY, PROPERTY_CHANGE = 1 << 19, 1 << 22


def is_main(x, window, pid):
    return x.cardinals(window, "_NET_WM_PID")[:1] == [pid] and \
        x.atom("_NET_WM_WINDOW_TYPE_NORMAL") in x.cardinals(window, "_NET_WM_WINDOW_TYPE")


def created_main_window(x, child, timeout):
    """The program's main window as soon as Qt has given it its type: new top-level
    windows are followed through CreateNotify and their PropertyNotify events."""
    x.select(x.root, SUBSTRUCTURE_NOTIFY)
    for window in x.children(x.root):   # created before the selection took effect
        x.select(window, PROPERTY_CHANGE)
        if is_main(x, window, child.pid):
            return window
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and child.poll() is None:
        ev = x.event(0.1)
        if ev is None:
            continue
        code = ev[0] & 0x7F
        if code == CREATE_NOTIFY:
            parent, window = struct.unpack("<II", ev[4:12])
            if parent != x.root:
                continue
            x.select(window, PROPERTY_CHANGE)
        elif code == PROPERTY_NOTIFY:
            window, = struct.unpack("<I", ev[4:8])
        else:
            continue
        if is_main(x, window, child.pid):
            return window
    return None


def wait(condition, timeout, child):
    """Poll until the condition gives a true value, the child exits or the time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and child.poll() is None:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    return None


REPARENT_NOTIFY = 21
ATTEMPTS = 3


def map_maximized(x, child):
    """Try to have the just started program's main window mapped maximized.
    Returns (the window, whether it is maximized)."""
    window = created_main_window(x, child, WAIT)
    if not window:
        return None, True   # the program exited, or never showed a window
    x.set_atoms(window, "_NET_WM_STATE", MAXIMIZED)
    wanted = {x.atom(n) for n in MAXIMIZED}
    state = x.atom("_NET_WM_STATE")
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and child.poll() is None:
        ev = x.event(0.1)
        if ev is None:
            continue
        code = ev[0] & 0x7F
        if code == PROPERTY_NOTIFY and struct.unpack("<II", ev[4:12]) == (window, state):
            if not wanted <= set(x.cardinals(window, "_NET_WM_STATE")):
                return window, False   # Qt's show() replaced the property
        elif code == REPARENT_NOTIFY and struct.unpack("<I", ev[8:12])[0] == window:
            break   # the window manager took the window, with or without our states
    if not wait(lambda: window in x.cardinals(x.root, "_NET_CLIENT_LIST"), WAIT, child):
        return window, True
    return window, x.size(window)[0] == x.screen[0]


def main():
    argv = sys.argv[1:]
    try:
        x = X11(os.environ["DISPLAY"])
    except OSError as exc:
        print("launch.py: no X display: %s" % exc, file=sys.stderr, flush=True)
        sys.exit(subprocess.call(argv))
    child = subprocess.Popen(argv)
    try:
        for attempt in range(1, ATTEMPTS + 1):
            window, maximized = map_maximized(x, child)
            if maximized:
                break
            if attempt < ATTEMPTS:
                # Shown (or about to be shown) unmaximized: maximizing it now would leave Qt
                # with the old frame, so the program starts again.
                print("launch.py: the main window is not mapped maximized; starting again",
                      file=sys.stderr, flush=True)
                child.kill()
                child.wait()
                child = subprocess.Popen(argv)
            else:
                print("launch.py: maximizing the shown main window", file=sys.stderr, flush=True)
                wait(lambda: window in x.cardinals(x.root, "_NET_CLIENT_LIST"), WAIT, child)
                x.maximize(window)
        x.sock.close()
    except OSError as exc:
        print("launch.py: could not maximize the main window: %s" % exc, file=sys.stderr, flush=True)
    sys.exit(child.wait())


if __name__ == "__main__":
    main()
