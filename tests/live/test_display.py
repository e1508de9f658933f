"""The display session on a real Xvfb: free display numbers, screenshots, XTest input
observed by a real X client window, the VNC live view."""
import socket
import threading
from pathlib import Path

import numpy as np
import pytest
from Xlib import XK, X
from Xlib import display as xdisplay

from clinigym.runtime.display import DisplaySession, InputError
from clinigym.runtime.waiting import poll, wait_for


@pytest.fixture(scope="module")
def session():
    s = DisplaySession()
    yield s
    s.close()


def test_several_sessions_get_distinct_displays():
    made = []
    threads = [threading.Thread(target=lambda: made.append(DisplaySession(window_manager=None)))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len({s.number for s in made}) == 3
    finally:
        for s in made:
            s.close()


def test_screenshot_is_rgb_of_the_geometry(session):
    frame = session.grab()
    assert frame.rgb.shape == (1080, 1920, 3) and frame.rgb.dtype == np.uint8


class Window:
    """A real X client window that records the input events it receives."""

    def __init__(self, name):
        self.d = xdisplay.Display(name)
        screen = self.d.screen()
        self.win = screen.root.create_window(
            0, 0, 1920, 1080, 0, screen.root_depth, background_pixel=screen.white_pixel,
            event_mask=X.ButtonPressMask | X.ButtonReleaseMask | X.KeyPressMask | X.PointerMotionMask)
        self.win.set_wm_name("probe")
        self.win.map()
        self.d.sync()
        self.events = []

    def drain(self):
        while self.d.pending_events():
            self.events.append(self.d.next_event())
        return self.events

    def close(self):
        self.win.destroy()
        self.d.close()


@pytest.fixture
def window(session):
    w = Window(session.name)
    # The window manager maps it: seconds when the machine is busy (a CI run on 2 cores).
    if not poll(lambda: w.drain() is not None and session.has_window("^probe$"), 30):
        pytest.fail(f"the probe window was not listed in 30 s: {listing(session)}; {seen_by_probe(w)}")
    # A click gives the window the keyboard focus, as for a person. The window manager may
    # still be placing it when it is listed, so click again until one arrives; the round trip
    # after each click queues all of its events, so none arrives after the clear below.
    def focus_click():
        session.click(960, 540)
        w.d.sync()
        return presses(w.drain(), X.ButtonRelease)
    if not poll(focus_click, 30, interval=0.5):
        pytest.fail(f"no click reached the probe window in 30 s: {listing(session)}")
    w.events.clear()
    yield w
    w.close()


def listing(session):
    """What the session sees, to tell a busy window manager from a lost server."""
    try:
        titles = session.window_titles()
    except Exception as exc:  # the failure being described
        titles = f"{type(exc).__name__}: {exc}"
    wm = session._workdir / "wm.log"
    return (f"titles {titles!r}; server {'answers' if session.answers() else 'does not answer'}; "
            f"processes {[p.poll() for p in session._procs]} (None: running) {process_states(session)}; "
            f"wm.log {wm.read_text(errors='replace')[-300:] if wm.exists() else 'gone'!r}")


def seen_by_probe(w):
    """The probe's own view (another connection than the session's): whether the window
    manager redirected its map, and the client list on that connection."""
    clients = w.d.screen().root.get_full_property(w.d.intern_atom("_NET_CLIENT_LIST"), X.AnyPropertyType)
    states = {X.IsUnmapped: "unmapped", X.IsUnviewable: "unviewable", X.IsViewable: "viewable"}
    return (f"probe {states.get(w.win.get_attributes().map_state)}, "
            f"client list {list(clients.value) if clients else None} on the probe's connection")


def process_states(session):
    """Each display process's state and where it waits in the kernel (a stuck window manager)."""
    found = []
    for p in session._procs:
        try:
            stat = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            found.append(f"{p.pid} {stat} {Path(f'/proc/{p.pid}/wchan').read_text()}")
        except OSError:
            found.append(f"{p.pid} gone")
    return found


def presses(events, kind):
    return [e for e in events if e.type == kind]


def test_clicks_buttons_and_scroll(session, window):
    session.click(100, 200)
    session.click(300, 400, button="right")
    session.click(50, 60, count=2)
    session.scroll(500, 500, dy=2)
    events = wait_for(lambda: len(presses(window.drain(), X.ButtonPress)) >= 6 and window.events, 30, "events")
    got = [(e.detail, e.event_x, e.event_y) for e in presses(events, X.ButtonPress)]
    # The WM may reparent and offset the window: compare relative to the first click.
    ox, oy = 100 - got[0][1], 200 - got[0][2]
    assert [(b, x + ox, y + oy) for b, x, y in got] == [
        (1, 100, 200), (3, 300, 400), (1, 50, 60), (1, 50, 60), (5, 500, 500), (5, 500, 500)]


def test_drag_moves_with_button_held(session, window):
    session.drag(100, 100, 300, 200)
    events = wait_for(lambda: presses(window.drain(), X.ButtonRelease) and window.events, 30, "release")
    motions = [e for e in events if e.type == X.MotionNotify and e.state & X.Button1Mask]
    assert len(motions) >= 5
    assert session.pointer() == (300, 200)


def test_type_and_keys(session, window):
    session.type_text("aB1.")
    session.key("ctrl+shift+t")
    events = wait_for(lambda: len(presses(window.drain(), X.KeyPress)) >= 8 and window.events, 30, "keys")
    # a, shift, b, 1, period, then ctrl, shift, t: one press each, in that order
    names = [window.d.keycode_to_keysym(e.detail, 0) for e in presses(events, X.KeyPress)]
    assert names == [XK.string_to_keysym(n) for n in
                     ("a", "Shift_L", "b", "1", "period", "Control_L", "Shift_L", "t")]
    with pytest.raises(InputError):
        session.key("nosuchkey")


def test_vnc_live_view_on_loopback_with_password(session):
    from clinigym.runtime.liveview import LiveView
    view = LiveView(session.number).start()
    port, password = view.vnc_port, view.password
    assert password

    def banner():
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            return sock.recv(12)
    try:
        assert wait_for(banner, 10, "x11vnc").startswith(b"RFB ")
    finally:
        view.close()
