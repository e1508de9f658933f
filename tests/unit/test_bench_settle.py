"""The settle bench's arithmetic: the program's CPU rate inside a pause, and the table."""
import pytest

from clinigym.bench.settle import cpu_rate, early_settles, format_settle, ms_stats

# (time, CPU seconds, timer due) samples from t0 = 100: busy at half a core until 100.4, then idle.
CPU = [(100.0, 1.0, False), (100.2, 1.1, False), (100.4, 1.2, False), (100.6, 1.2, False),
       (100.8, 1.2, False), (101.0, 1.2, False)]


def test_cpu_rate_between_marks():
    changes = [0.2, 0.4, 1.0]               # seconds after t0
    assert cpu_rate(CPU, 100.0, changes, 0) == pytest.approx(0.5)    # t0 .. first change
    assert cpu_rate(CPU, 100.0, changes, 1) == pytest.approx(0.5)    # 0.2 .. 0.4
    assert cpu_rate(CPU, 100.0, changes, 2) == pytest.approx(0.0)    # 0.4 .. 1.0: idle
    assert cpu_rate(CPU, 100.0, [0.1], 0) == 0.0                     # one sample inside: no rate


def test_early_settles_replays_the_idle_rule():
    # Changes at 0.2 and 0.9 s: the pause 0.4 .. 0.9 holds no CPU at all (a timed repaint).
    cpu = [(100.0 + i * 0.03, min(i * 0.03, 0.4) * 0.5, None) for i in range(40)]
    assert early_settles(cpu, 100.0, [0.2, 0.9], window=0.15, max_rate=0.05, quiet=0.8) == 1
    assert early_settles(cpu, 100.0, [0.2, 0.9], window=0.6, max_rate=0.05, quiet=0.8) == 0
    assert early_settles(cpu, 100.0, [0.2, 0.3], window=0.15, max_rate=0.05, quiet=0.8) == 0
    # A pause of 0.7 s outlasts a 0.5 s quiet window too: the old rule ends that step as early.
    assert early_settles(cpu, 100.0, [0.2, 0.9], window=0.15, max_rate=0.05, quiet=0.5) == 0


def test_early_settles_counts_a_due_timer_as_work():
    # The same pause, with the repaint's timer seen pending from 0.4 s until it fires.
    cpu = [(100.0 + i * 0.03, min(i * 0.03, 0.4) * 0.5, 0.9 - i * 0.03 if 0.4 <= i * 0.03 < 0.9 else None)
           for i in range(40)]
    assert early_settles(cpu, 100.0, [0.2, 0.9], window=0.15, max_rate=0.05, quiet=0.8, horizon=0.6) == 0
    # With a horizon too short to see it, the timer does not hold the step.
    assert early_settles(cpu, 100.0, [0.2, 0.9], window=0.15, max_rate=0.05, quiet=0.8, horizon=0.05) == 1


def rule(p50, cpu):
    return {"step": {"p50_ms": p50, "p95_ms": p50 + 10}, "settle": {}, "cpu_ms_per_step": cpu}


def test_table_row():
    s = {"first_change": {"p50_ms": 120.0}, "last_change": {"p50_ms": 160.0, "max_ms": 230.0},
         "longest_gap": {"max_ms": 70.0}, "gap_cpu_max": 0.5, "tail_cpu_max": None, "early": 0,
         "rules": {"damage": rule(600.0, 20.0), "polling": rule(660.0, 60.0)}}
    row = format_settle([{"app": "dicomscope", "backend": "local", "quiet_s": 0.5, "idle_quiet_s": 0.15,
                          "settle_rule": s}])
    assert row.splitlines()[1].split() == [
        "dicomscope", "local", "500", "150", "120", "160", "230", "70", "50%", "-", "0",
        "600", "610", "20.0", "660", "670", "60.0", "1.10x", "3.00x"]


def test_ms_stats():
    assert ms_stats([0.1, 0.2, 0.3]) == {"n": 3, "p50_ms": 200.0, "p95_ms": pytest.approx(290.0), "max_ms": 300.0}
    assert ms_stats([]) == {"n": 0, "p50_ms": None, "p95_ms": None, "max_ms": None}
