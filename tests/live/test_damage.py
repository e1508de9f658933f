"""Settling from the X server's damage reports, on a real Xvfb with a real X client that
draws: what is drawn is reported and compared, a redraw with the same pixels is no
change, a missed report is caught by the final check, both rules settle on the same
screen, and the idle window ends a pause only while the program's process sleeps."""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from Xlib import display as xdisplay

from clinigym.core.errors import ProgramDied
from clinigym.runtime.backends.local import cpu_of_groups
from clinigym.runtime.busy import BusyMeter, Hold
from clinigym.runtime.damage import settle_on_damage, watch_changes
from clinigym.runtime.display import DisplaySession, InputError, server_answers
from clinigym.runtime.waiting import wait_for


@pytest.fixture(scope="module")
def session():
    s = DisplaySession(window_manager=None)
    yield s
    s.close()


class Painter:
    """A real X client with a window over the whole screen that fills rectangles."""

    def __init__(self, name):
        self.d = xdisplay.Display(name)
        screen = self.d.screen()
        self.win = screen.root.create_window(0, 0, 1920, 1080, 0, screen.root_depth,
                                             background_pixel=screen.black_pixel)
        self.win.map()
        self.gcs = {c: self.win.create_gc(foreground=c) for c in (screen.black_pixel, screen.white_pixel)}
        self.white, self.black = screen.white_pixel, screen.black_pixel
        self.d.sync()

    def fill(self, color, x, y, w, h):
        self.win.fill_rectangle(self.gcs[color], x, y, w, h)
        self.d.sync()

    def close(self):
        self.win.destroy()
        self.d.close()


@pytest.fixture
def painter(session):
    p = Painter(session.name)
    session.wait_settled(0.1, 5)
    p.fill(p.black, 0, 0, 1920, 1080)
    session.wait_settled(0.1, 5)
    yield p
    p.close()


def test_a_drawing_is_reported_with_its_area_and_pixels(session, painter):
    assert session.settle_rule == "damage"
    tracker = session.tracker(min_changed=40)
    painter.fill(painter.white, 100, 200, 30, 20)
    assert tracker.poll(5.0) is not None
    assert tracker.changes[-1][1] == 30 * 20
    assert (tracker.base[200:220, 100:130] == session.grab().raw[200:220, 100:130]).all()


def test_drawings_close_together_are_one_grab_timed_at_the_last(session, painter):
    tracker = session.tracker(min_changed=40)
    tracker.batch = 0.5       # wide, so a slow thread still draws all three inside it
    grabs = []
    tracker.grab_area = lambda *area: grabs.append(area) or session.grab_area(*area)
    drawn = []

    def draw():
        for i in range(3):
            drawn.append(time.monotonic())
            painter.fill(painter.white, 100 + 100 * i, 100, 20, 20)
            time.sleep(0.02)
    t = threading.Thread(target=draw)
    t.start()
    when = tracker.poll(5.0)
    t.join()
    assert len(grabs) == 1 and tracker.changes == [(when, 3 * 20 * 20)]
    assert when >= drawn[-1]  # the change is timed at the last drawing, not the first


def test_a_redraw_with_the_same_pixels_or_a_caret_is_no_change(session, painter):
    tracker = session.tracker(min_changed=40)
    painter.fill(painter.black, 0, 0, 500, 500)       # drawn, but nothing differs
    painter.fill(painter.white, 700, 700, 2, 15)      # 30 pixels: under min_changed
    assert watch_changes(tracker, session.grab, 0.3) == []
    assert tracker.missed == 0


def test_settles_after_the_last_change_and_on_the_screen_drawn(session, painter):
    def draw():
        for i in range(5):
            painter.fill(painter.white, 50 + 60 * i, 50, 50, 50)
            time.sleep(0.1)
    before = session.grab()
    t = threading.Thread(target=draw)
    start = time.monotonic()
    t.start()
    frame, settled = session.wait_settled(quiet=0.3, timeout=5, since=before)
    t.join()
    assert settled
    # The fifth square is drawn about 0.4 s in, so settling ends 0.3 s after it, not before.
    assert time.monotonic() - start >= 0.4 + 0.3 - 0.05
    assert (frame.raw == session.grab().raw).all()
    assert (frame.rgb[60, 50 + 60 * 4 + 10] == 255).all()


def test_a_change_no_report_told_of_is_caught_at_the_end(session, painter):
    """The final whole-screen check: a stale known screen (as after a lost report) is taken
    as a change, so the settled frame is still the real screen."""
    tracker = session.tracker(min_changed=40)
    painter.fill(painter.white, 400, 400, 100, 100)
    tracker.watch.wait(1.0)   # the report is consumed here and never compared: "missed"
    frame, settled = settle_on_damage(tracker, session.grab, quiet=0.2, timeout=5)
    assert settled and tracker.missed == 1
    assert (frame.rgb[450, 450] == 255).all()
    assert (tracker.base == frame.raw).all()


def test_both_rules_settle_on_the_same_screen(session, painter):
    frames = {}
    for rule in ("damage", "polling"):
        session.settle_rule = rule
        painter.fill(painter.black, 0, 0, 1920, 1080)
        session.wait_settled(0.1, 5)
        before = session.grab()
        painter.fill(painter.white, 300, 300, 200, 100)
        frames[rule], settled = session.wait_settled(0.2, 5, since=before)
        assert settled
    session.settle_rule = "damage"
    assert np.array_equal(frames["damage"].raw, frames["polling"].raw)


@pytest.fixture
def program():
    """A real process standing for the program: it computes for `busy` seconds, then sleeps."""
    started = []

    def start(busy: float) -> BusyMeter:
        code = f"import time\nt = time.process_time()\nwhile time.process_time() - t < {busy}: pass\ntime.sleep(30)"
        proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
        started.append(proc)
        return BusyMeter(lambda: cpu_of_groups({proc.pid}), window=0.15, max_rate=0.05)
    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def _draw_later(painter, seconds):
    def draw():
        time.sleep(seconds)   # the program's own pause before it draws again
        painter.fill(painter.white, 900, 500, 80, 80)
    t = threading.Thread(target=draw)
    t.start()
    return t


def test_a_pause_while_the_program_computes_is_not_settled(session, painter, program):
    busy = program(busy=0.8)
    before = session.grab()
    painter.fill(painter.white, 100, 100, 80, 80)
    later = _draw_later(painter, 0.4)
    frame, settled = session.wait_settled(quiet=3.0, timeout=10, since=before, busy=busy)
    later.join()
    assert settled and (frame.rgb[540, 940] == 255).all()   # the drawing after the pause is in


def test_a_pause_while_the_program_sleeps_ends_at_the_idle_window(session, painter, program):
    """What the idle window trades: a program idle for longer than it (a repaint on a timer)
    is caught before it draws again; such programs get a longer window (`clinigym bench`)."""
    busy = program(busy=0.0)
    before = session.grab()
    painter.fill(painter.white, 100, 100, 80, 80)
    later = _draw_later(painter, 1.0)
    frame, settled = session.wait_settled(quiet=3.0, timeout=10, since=before, busy=busy)
    later.join()
    assert settled and (frame.rgb[140, 140] == 255).all() and (frame.rgb[540, 940] == 0).all()


def test_the_rule_is_chosen_by_argument_or_environment(monkeypatch):
    with pytest.raises(ValueError, match="settle rule 'fast'"):
        DisplaySession(window_manager=None, settle_rule="fast")
    monkeypatch.setenv("CLINIGYM_SETTLE", "polling")
    s = DisplaySession(window_manager=None)
    try:
        assert s.settle_rule == "polling"
        assert s.wait_settled(0.1, 5)[1]
    finally:
        s.close()


def test_no_damage_extension_falls_back_to_polling(monkeypatch):
    monkeypatch.setattr(xdisplay.Display, "has_extension", lambda self, name: name != "DAMAGE")
    s = DisplaySession(window_manager=None)
    try:
        assert s.settle_rule == "polling" and s.tracker() is None
        assert s.wait_settled(0.1, 5)[1]
    finally:
        s.close()


def test_raw_reports_keep_coming_after_many_settles(session, painter):
    """The report level that needs no clearing: after many rounds, drawings are still
    reported (the levels that report growth only went silent for good now and then)."""
    for i in range(30):
        tracker = session.tracker(min_changed=0)
        painter.fill(painter.white if i % 2 == 0 else painter.black, 0, 0, 1920, 1080)
        assert tracker.poll(5.0) is not None, f"round {i}: the drawing was not reported"


def test_an_x_server_that_dies_is_a_program_error_not_a_hang():
    s = DisplaySession(window_manager=None)
    try:
        tracker = s.tracker()
        tracker.poll(0.2)         # what was drawn at start is taken in; nothing else is drawn
        os.killpg(s.process_groups().pop(), signal.SIGKILL)
        with pytest.raises(ProgramDied, match="closed the connection"):
            for _ in range(20):   # the first wait may still see the socket open
                tracker.poll(0.5)
    finally:
        s.close()


def test_every_x_call_on_a_dead_server_is_the_display_dying():
    """Xlib (a closed connection) and mss (an assertion) fail each in its own way when the
    server dies: the display says ProgramDied for both, and passes other errors on."""
    s = DisplaySession(window_manager=None)
    try:
        with pytest.raises(InputError, match="unknown key name"):
            s.key("nosuchkey")
        assert s.answers()
        os.killpg(s.process_groups().pop(), signal.SIGKILL)
        wait_for(lambda: not s.answers(), 5, "the server gone")
        for call in (s.grab, s.window_titles, s.pointer, lambda: s.click(5, 5), lambda: s.key("Return"),
                     lambda: s.wait_settled(0.2, 2)):
            with pytest.raises(ProgramDied, match=rf"^the X display is gone \({s.name}: "):
                call()
    finally:
        s.close()

def test_a_server_dying_while_the_screen_settles_is_the_display_dying():
    """The damage watch can see its connection close before the server's process has
    exited (CI did): that is the display's death all the same, in the same words."""
    s = DisplaySession(window_manager=None)
    killer = threading.Timer(0.3, os.killpg, (s.process_groups().pop(), signal.SIGKILL))
    try:
        killer.start()
        with pytest.raises(ProgramDied, match=rf"^the X display is gone \({s.name}: "):
            s.wait_settled(quiet=2.0, timeout=5.0)
    finally:
        killer.join()
        s.close()


def test_attaching_to_a_display_that_is_gone_is_its_death_and_leaves_nothing():
    """A container's display killed while the environment attaches to it (the soak found it:
    mss failed with a bare assertion): ProgramDied, which the reset's self-healing retries."""
    number = next(n for n in range(950, 999) if not server_answers(n))
    before = set(Path(tempfile.gettempdir()).glob("clinigym-display-*"))
    with pytest.raises(ProgramDied, match=rf"^the X display is gone \(:{number}: "):
        DisplaySession(window_manager=None, number=number)
    assert set(Path(tempfile.gettempdir()).glob("clinigym-display-*")) == before


@pytest.mark.parametrize("rule", ["damage", "polling"])
def test_a_hold_keeps_the_screen_unsettled_and_waits_for_what_follows(session, painter, rule):
    """Drawing still owed (a rescan due once a timer ends) holds the step past its quiet
    window; what the program draws right after the hold ends is in the settled screen."""
    session.settle_rule = rule
    drawing: list[threading.Timer] = []
    try:
        before = session.grab()
        released = time.monotonic() + 0.6

        def owed() -> bool:
            if time.monotonic() < released:
                return True
            if not drawing:   # the rescan's drawing comes just after the thread woke, as DICOMscope's
                drawing.append(threading.Timer(0.05, painter.fill, (painter.white, 700, 700, 80, 80)))
                drawing[0].start()
            return False

        start = time.monotonic()
        frame, settled = session.wait_settled(quiet=0.15, timeout=5, since=before, hold=Hold(owed))
        assert settled
        assert time.monotonic() - start >= 0.6 + 0.15 - 0.05   # the hold, then a whole window again
        assert (frame.rgb[740, 740] == 255).all()
    finally:
        for timer in drawing:
            timer.join()
        session.settle_rule = "damage"
