"""The program's CPU use over a sliding window (the idle half of the settle rule)."""
from clinigym.runtime.busy import BusyMeter


class Program:
    """A CPU counter and a clock, both moved by hand."""
    def __init__(self):
        self.now, self.cpu = 0.0, 0.0

    def run(self, seconds: float, cores: float) -> None:
        self.now += seconds
        self.cpu += seconds * cores


def meter(p: Program) -> BusyMeter:
    return BusyMeter(lambda: p.cpu, window=0.15, max_rate=0.05, clock=lambda: p.now)


def test_idle_only_over_a_whole_quiet_window():
    p = Program()
    m = meter(p)
    m.sample()
    p.run(0.1, 0.0)
    m.sample()
    assert not m.idle()          # 0.1 s of history: too short to tell
    p.run(0.06, 0.0)
    m.sample()
    assert m.idle()              # 0.16 s without CPU


def test_work_inside_the_window_is_busy_and_old_work_is_forgotten():
    p = Program()
    m = meter(p)
    for _ in range(5):           # 0.15 s at a full core
        m.sample()
        p.run(0.03, 1.0)
    m.sample()
    assert not m.idle()
    for _ in range(4):           # 0.12 s idle: the window still holds 0.03 s of work
        p.run(0.03, 0.0)
        m.sample()
    assert not m.idle()
    for _ in range(2):
        p.run(0.03, 0.0)
        m.sample()
    assert m.idle() and len(m.samples) <= 8   # samples older than the window are dropped


def test_a_trickle_below_the_rate_is_idle():
    p = Program()
    m = meter(p)
    for _ in range(7):
        m.sample()
        p.run(0.03, 0.04)
    m.sample()
    assert m.idle()


def test_a_timer_due_soon_is_not_idle():
    p = Program()
    wake = [0.3]
    m = BusyMeter(lambda: p.cpu, window=0.15, max_rate=0.05, clock=lambda: p.now,
                  next_wake=lambda: wake[0], horizon=0.5)
    m.sample()
    p.run(0.2, 0.0)
    m.sample()
    assert not m.idle()          # no CPU, but a timer will wake the program within the horizon
    wake[0] = 0.6
    assert m.idle()              # beyond the horizon
    wake[0] = None
    assert m.idle()              # no timer at all
    wake[0] = 0.0
    assert not m.idle()          # a thread runs
