"""Settling measured: what a program draws after each oracle action (a long watch of the
X server's damage reports), and steps under each settle rule side by side in one run:
step p50/p95 and the environment process's CPU seconds per step."""
from __future__ import annotations

import math
import time
from contextlib import contextmanager, nullcontext

import numpy as np

from clinigym.envs.steps import StepsEnv
from clinigym.run.runner import agent_for
from clinigym.runtime.busy import SAMPLE_EVERY, BusyMeter
from clinigym.runtime.damage import watch_changes
from clinigym.runtime.display import SETTLE_RULES
from clinigym.spec.scenarios import Scenario

# Long enough to see a delayed repaint (Aeskulap paints again 1.0-1.45 s after a change).
WATCH_SECONDS = 3.0


def ms_stats(values: list[float]) -> dict:
    """Count, p50, p95 and max in milliseconds of durations in seconds."""
    if not values:
        return {"n": 0, "p50_ms": None, "p95_ms": None, "max_ms": None}
    a = np.asarray(values) * 1000
    return {"n": len(values), "p50_ms": float(np.percentile(a, 50)), "p95_ms": float(np.percentile(a, 95)),
            "max_ms": float(a.max())}


# A sample of the program while it is watched: (time, CPU seconds so far, seconds until
# its next timer or None: `Backend.next_wake`).
Sample = tuple[float, float, float | None]


def cpu_rate(cpu: list[Sample], t0: float, marks: list[float], i: int) -> float:
    """The program's CPU use (CPU seconds per second) between marks i-1 and i (seconds from
    t0; mark -1 is t0 itself): whether it still works while nothing is drawn."""
    start, end = t0 + (marks[i - 1] if i else 0.0), t0 + marks[i]
    inside = [s for s in cpu if start <= s[0] <= end]
    if len(inside) < 2:
        return 0.0
    (ta, ca, _), (tb, cb, _) = inside[0], inside[-1]
    return (cb - ca) / (tb - ta) if tb > ta else 0.0


def early_settles(cpu: list[Sample], t0: float, changes: list[float], window: float,
                  max_rate: float, quiet: float, horizon: float = math.inf) -> int:
    """Pauses between changes (seconds from t0) in which the idle rule, replayed on the
    samples, would have called the screen settled though the program drew again after.
    Only pauses shorter than `quiet` count: a longer one ends the quiet window's step as
    well (a program's own periodic work, seconds after the action)."""
    now: dict = {"t": 0.0, "cpu": 0.0, "wake": None}
    meter = BusyMeter(lambda: now["cpu"], window, max_rate, clock=lambda: now["t"],
                      next_wake=lambda: now["wake"], horizon=horizon)
    early, starts = 0, [0.0, *changes]
    for prev, nxt in zip(starts, changes):
        if nxt - prev >= quiet:
            continue
        for t, c, wake in cpu:
            if t0 + prev <= t < t0 + nxt:
                now.update(t=t, cpu=c, wake=wake)
                meter.sample()
                if t - t0 - prev >= window and meter.idle():
                    early += 1
                    break
    return early


@contextmanager
def _watching(env: StepsEnv, seconds: float, found: list[dict]):
    """Every settle of the environment watches the screen for `seconds` first and
    notes the changes (times from the settle's start, right after the action)."""
    backend = env.backend
    settle, idle = backend.settle, backend.app.settle

    def watched(since=None):
        tracker = backend.display.tracker(since, backend.app.settle.min_changed)
        tracker.batch = 0.0      # the watch times every drawing, not batches of them
        def sample() -> Sample:
            return time.monotonic(), backend.work_seconds(), backend.next_wake() if idle.timer_horizon else None

        t0 = time.monotonic()
        cpu = [sample()]
        seen = watch_changes(tracker, backend.display.grab, seconds, every=SAMPLE_EVERY,
                             tick=lambda: cpu.append(sample()))
        changes = [t - t0 for t, n in seen if n > 0]
        gaps = np.diff([0.0, *changes])
        found.append({"scenario": env.scenario.key, "changes": changes,
                      "longest_gap": float(gaps.max()) if changes else None,
                      "gap_cpu": cpu_rate(cpu, t0, changes, int(gaps.argmax())) if changes else None,
                      "tail_cpu": cpu_rate(cpu, t0, [*changes, seconds], len(changes)) if changes else None,
                      "early": early_settles(cpu, t0, changes, idle.idle_quiet, idle.idle_cpu, idle.quiet,
                                              idle.timer_horizon or math.inf)
                      if idle.idle_quiet else None,
                      "missed": sum(1 for _, n in seen if n < 0)})
        return settle(since=since)

    backend.settle = watched
    try:
        yield
    finally:
        del backend.settle


def oracle_steps(env: StepsEnv, repeats: int, on_step=None, seed: int = 0) -> list[dict]:
    """Oracle episodes; per step, its timings and the environment process's CPU seconds.
    `on_step`, if given, makes a context every step runs in."""
    oracle = agent_for(env, "oracle")
    steps = []
    for i in range(repeats):
        obs, info = env.reset(seed=seed + i)
        done = False
        while not done:
            action = oracle.act(obs, info)
            cpu = time.process_time()
            with on_step() if on_step else nullcontext():
                obs, _, term, trunc, info = env.step(action)
            steps.append({"timings": info["timings"], "cpu": time.process_time() - cpu})
            done = term or trunc
    return steps


def bench_settle(env: StepsEnv, repeats: int, watch: list[Scenario] | None = None) -> dict:
    """The long watch (one oracle episode of each scenario in `watch`, else of the env's
    own), then oracle episodes under each settle rule, on one environment."""
    display = env.backend.display
    if display is None:
        env.reset(seed=0)
        display = env.backend.display
    found: list[dict] = []
    if display.tracker() is not None:
        for scenario in watch or [env.scenario]:
            watched = StepsEnv(scenario, backend=env.backend)
            oracle_steps(watched, 1, lambda w=watched: _watching(w, WATCH_SECONDS, found))
            watched.close()
    first = [f["changes"][0] for f in found if f["changes"]]
    last = [f["changes"][-1] for f in found if f["changes"]]
    gaps = [f["longest_gap"] for f in found if f["changes"]]
    gap_cpu = [f["gap_cpu"] for f in found if f["changes"]]
    tail_cpu = [f["tail_cpu"] for f in found if f["changes"]]
    rules = {}
    for rule in SETTLE_RULES:
        env.backend.display.settle_rule = rule
        steps = oracle_steps(env, repeats)
        rules[rule] = {"step": ms_stats([s["timings"]["total"] for s in steps]),
                       "settle": ms_stats([s["timings"]["settle"] for s in steps]),
                       "cpu_ms_per_step": float(np.mean([s["cpu"] for s in steps]) * 1000)}
    env.backend.display.settle_rule = SETTLE_RULES[0]
    return {"watched_scenarios": len(watch or [env.scenario]),
            "watched_steps": len(found), "no_change": sum(1 for f in found if not f["changes"]),
            "missed": sum(f["missed"] for f in found),
            "early": sum(f["early"] for f in found) if found and found[0]["early"] is not None else None,
            "first_change": ms_stats(first), "last_change": ms_stats(last), "longest_gap": ms_stats(gaps),
            "gap_cpu_max": max(gap_cpu, default=None), "tail_cpu_max": max(tail_cpu, default=None),
            "rules": rules, "watches": found}


def format_settle(apps: list[dict]) -> str:
    new, old = SETTLE_RULES
    lines = [f"{'program':<12} {'backend':<7} {'quiet':>6} {'idle':>5} {'first':>6} {'last p50':>9} {'last max':>9} "
             f"{'gap max':>8} {'gap cpu':>8} {'tail cpu':>8} {'early':>5} {'step p50':>9} {'step p95':>9} "
             f"{'cpu/step':>9} "
             f"{'old p50':>8} {'old p95':>8} {'old cpu':>8} {'p50 x':>6} {'cpu x':>6}"]
    for r in apps:
        s = r.get("settle_rule")
        if not s:
            continue
        a, b = s["rules"][new], s["rules"][old]

        def f(v):
            return "-" if v is None else f"{v:.0f}"

        def pct(v):
            return "-" if v is None else f"{v * 100:.0f}%"
        lines.append(
            f"{r['app']:<12} {r['backend']:<7} {r['quiet_s'] * 1000:>6.0f} "
            f"{f(r['idle_quiet_s'] and r['idle_quiet_s'] * 1000):>5} {f(s['first_change']['p50_ms']):>6} "
            f"{f(s['last_change']['p50_ms']):>9} {f(s['last_change']['max_ms']):>9} "
            f"{f(s['longest_gap']['max_ms']):>8} {pct(s['gap_cpu_max']):>8} {pct(s['tail_cpu_max']):>8} "
            f"{f(s['early']):>5} "
            f"{a['step']['p50_ms']:>9.0f} {a['step']['p95_ms']:>9.0f} "
            f"{a['cpu_ms_per_step']:>9.1f} {b['step']['p50_ms']:>8.0f} {b['step']['p95_ms']:>8.0f} "
            f"{b['cpu_ms_per_step']:>8.1f} {b['step']['p50_ms'] / a['step']['p50_ms']:>5.2f}x "
            f"{b['cpu_ms_per_step'] / max(a['cpu_ms_per_step'], 1e-9):>5.2f}x")
    lines.append(f"settling, ms: quiet = the program's quiet window, idle = its shorter window while its processes "
                 f"are idle; first/last = first and last change after the "
                 f"action in a {WATCH_SECONDS:g} s watch (p50; last max = the latest seen), gap max = the longest "
                 f"pause between changes of one step; gap cpu / tail cpu = the program's own CPU use "
                 f"(its processes and display, and its database's server processes; % of one core, the highest of any "
                 f"step) in that pause and after "
                 f"its last change; early = pauses shorter than quiet in which the idle window would have "
                 f"ended the step before the program drew again; step and cpu/step (env process CPU) by the "
                 f"{new} rule, old = the {old} rule, x = old over new")
    return "\n".join(lines)
