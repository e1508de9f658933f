"""Start ITK-SNAP with its main window maximized, so every run has the same geometry.

ITK-SNAP 3.6 sizes its main window itself (874x700, about 35 px from the left,
width following the image's aspect ratio) and has no geometry option; Qt's own
`-geometry` is undone by the program right after the window is shown.

The window has to be mapped maximized. Maximizing it once it is shown (an EWMH
client message) changes its frame under Qt, and in about one start in twenty Qt 5
keeps the border of the unmaximized frame: every dialog it centres then lands 9 px
right and 20 px lower than in the other runs. Putting the maximized states into
the window's _NET_WM_STATE between its creation and its mapping (10-20 ms) loses
the race about once in a hundred starts. So the launcher gives the window manager
of the container (openbox) an application rule, in the openbox configuration of
that container (written once, then `openbox --reconfigure`): normal windows of
class ITK-SNAP open maximized. Then it starts the program, checks (bounded) that
the main window came up maximized, maximizes it otherwise (and says so on stderr),
waits for the program and exits with its status, so a crash is seen as the
program's exit.

It runs inside the container on Debian's python3 (standard library only), with a
minimal X11 client speaking the core protocol on the display's Unix socket.

Usage: python3 launch.py COMMAND [ARGS...]
"""
import os
import socket
import struct
import subprocess
import sys
import time

WAIT = 60.0   # seconds to wait for the window; the host's readiness timeout bounds the rest
MAXIMIZED = ("_NET_WM_STATE_MAXIMIZED_VERT", "_NET_WM_STATE_MAXIMIZED_HORZ")
RULE = """  <!-- clinigym: ITK-SNAP's main window opens maximized (containers/itksnap/launch.py) -->
  <application class="ITK-SNAP" type="normal">
    <maximized>yes</maximized>
  </application>
"""


def openbox_rule():
    """Add RULE to the configuration of the running openbox and make it reload; returns
    whether anything changed. The file is the one openbox reads: its own environment's
    XDG_CONFIG_HOME, or HOME/.config (the system file is the starting point)."""
    pids = [p for p in os.listdir("/proc") if p.isdigit() and _read(f"/proc/{p}/comm").strip() == "openbox"]
    if not pids:
        return False
    env = dict(v.split("=", 1) for v in _read(f"/proc/{pids[0]}/environ").split("\0") if "=" in v)
    folder = os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", "/root"), ".config"),
                          "openbox")
    path = os.path.join(folder, "rc.xml")
    text = _read(path) or _read("/etc/xdg/openbox/rc.xml")
    if RULE in text:
        return False
    if "</applications>" not in text:
        raise OSError("no <applications> section in the openbox configuration")
    os.makedirs(folder, exist_ok=True)
    with open(path, "w") as f:
        f.write(text.replace("</applications>", RULE + "</applications>", 1))
    subprocess.call(["openbox", "--reconfigure"])
    return True


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _pad(n):
    return (4 - n % 4) % 4


class X11:
    """Just enough of the core protocol: atoms, properties, window sizes, SendEvent."""

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

    def _read(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise OSError("X server closed the connection")
            buf += chunk
        return buf

    def _reply(self):
        """The next reply (None for an error, e.g. a window that vanished); this client
        selects no events, so nothing else arrives."""
        head = self._read(32)
        if head[0] == 0:
            return None
        extra, = struct.unpack("<I", head[4:8])
        return head + self._read(extra * 4)

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

    def width(self, window):
        self.sock.sendall(struct.pack("<BxHI", 14, 2, window))
        reply = self._reply()
        return struct.unpack("<H", reply[16:18])[0] if reply else 0

    def maximize(self, window):
        """Ask the window manager to maximize a managed window (EWMH client message)."""
        atoms = [self.atom(n) for n in MAXIMIZED]
        event = struct.pack("<BBHII5I", 33, 32, 0, window, self.atom("_NET_WM_STATE"), 1, *atoms, 1, 0)
        mask = (1 << 19) | (1 << 20)   # SubstructureNotify | SubstructureRedirect
        self.sock.sendall(struct.pack("<BBHII", 25, 0, 11, self.root, mask) + event)
        self.cardinals(self.root, "_NET_CLIENT_LIST")   # a round trip


def main_window(x, pid):
    """The program's first managed window of type NORMAL, or None."""
    normal = x.atom("_NET_WM_WINDOW_TYPE_NORMAL")
    for window in x.cardinals(x.root, "_NET_CLIENT_LIST"):
        if x.cardinals(window, "_NET_WM_PID")[:1] == [pid] and \
                normal in x.cardinals(window, "_NET_WM_WINDOW_TYPE"):
            return window
    return None


def main():
    argv = sys.argv[1:]
    try:
        openbox_rule()
    except OSError as exc:
        print("launch.py: no openbox rule: %s" % exc, file=sys.stderr, flush=True)
    child = subprocess.Popen(argv)
    try:
        x = X11(os.environ["DISPLAY"])
        deadline = time.monotonic() + WAIT
        while child.poll() is None and time.monotonic() < deadline:
            window = main_window(x, child.pid)
            if window:
                if x.width(window) != x.screen[0]:
                    print("launch.py: the main window was shown unmaximized; maximizing it",
                          file=sys.stderr, flush=True)
                    x.maximize(window)
                break
            time.sleep(0.01)
        x.sock.close()
    except OSError as exc:
        print("launch.py: could not check the main window: %s" % exc, file=sys.stderr, flush=True)
    sys.exit(child.wait())


if __name__ == "__main__":
    main()
