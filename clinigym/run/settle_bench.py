"""Settling measured: what a program draws after each oracle action (a long watch of the
X server's damage reports), and steps under each settle rule side by side in one run:
step p50/p95 and the environment process's CPU seconds per step."""
from __future__ import annotations

import time
from contextlib import contextmanager, nullcontext

import numpy as np

from clinigym.envs.live import LiveEnv
from clinigym.run.runner import agent_for
from clinigym.runtime.damage import watch_changes
from clinigym.runtime.display import SETTLE_RULES

# Long enough to see a delayed repaint (Aeskulap paints again 1.0-1.45 s after a change).
WATCH_SECONDS = 3.0


def _ms(values: list[float]) -> dict:
    if not values:
        return {"n": 0, "p50_ms": None, "p95_ms": None, "max_ms": None}
    a = np.asarray(values) * 1000
    return {"n": len(values), "p50_ms": float(np.percentile(a, 50)), "p95_ms": float(np.percentile(a, 95)),
            "max_ms": float(a.max())}


@contextmanager
def _watching(env: LiveEnv, seconds: float, found: list[dict]):
    """Every settle of the environment watches the screen for `seconds` first and
    notes the changes (times from the settle's start, right after the action)."""
    backend = env.backend
    settle = backend.settle

    def watched(since=None):
        tracker = backend.display.tracker(since, backend.app.settle.min_changed)
        t0 = time.monotonic()
        seen = watch_changes(tracker, backend.display.grab, seconds)
        changes = [t - t0 for t, n in seen if n > 0]
        gaps = np.diff([0.0, *changes]).tolist()
        found.append({"changes": changes, "longest_gap": max(gaps) if changes else None,
                      "missed": sum(1 for _, n in seen if n < 0)})
        return settle(since=since)

    backend.settle = watched
    try:
        yield
    finally:
        del backend.settle


def oracle_steps(env: LiveEnv, repeats: int, on_step=None, seed: int = 0) -> list[dict]:
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


def bench_settle(env: LiveEnv, repeats: int) -> dict:
    """The long watch, then oracle episodes under each settle rule, on one environment."""
    display = env.backend.display
    if display is None:
        env.reset(seed=0)
        display = env.backend.display
    found: list[dict] = []
    if display.tracker() is not None:
        oracle_steps(env, 1, lambda: _watching(env, WATCH_SECONDS, found))
    first = [f["changes"][0] for f in found if f["changes"]]
    last = [f["changes"][-1] for f in found if f["changes"]]
    gaps = [f["longest_gap"] for f in found if f["changes"]]
    rules = {}
    for rule in SETTLE_RULES:
        env.backend.display.settle_rule = rule
        steps = oracle_steps(env, repeats)
        rules[rule] = {"step": _ms([s["timings"]["total"] for s in steps]),
                       "settle": _ms([s["timings"]["settle"] for s in steps]),
                       "cpu_ms_per_step": float(np.mean([s["cpu"] for s in steps]) * 1000)}
    env.backend.display.settle_rule = SETTLE_RULES[0]
    return {"watched_steps": len(found), "no_change": sum(1 for f in found if not f["changes"]),
            "missed": sum(f["missed"] for f in found),
            "first_change": _ms(first), "last_change": _ms(last), "longest_gap": _ms(gaps),
            "rules": rules, "watches": found}


def format_settle(apps: list[dict]) -> str:
    new, old = SETTLE_RULES
    lines = [f"{'program':<12} {'backend':<7} {'quiet':>6} {'first':>6} {'last p50':>9} {'last max':>9} "
             f"{'gap max':>8} {'step p50':>9} {'step p95':>9} {'cpu/step':>9} {'old p50':>8} {'old p95':>8} "
             f"{'old cpu':>8} {'p50 x':>6} {'cpu x':>6}"]
    for r in apps:
        s = r.get("settle_rule")
        if not s:
            continue
        a, b = s["rules"][new], s["rules"][old]

        def f(v):
            return "-" if v is None else f"{v:.0f}"
        lines.append(
            f"{r['app']:<12} {r['backend']:<7} {r['quiet_s'] * 1000:>6.0f} {f(s['first_change']['p50_ms']):>6} "
            f"{f(s['last_change']['p50_ms']):>9} {f(s['last_change']['max_ms']):>9} "
            f"{f(s['longest_gap']['max_ms']):>8} {a['step']['p50_ms']:>9.0f} {a['step']['p95_ms']:>9.0f} "
            f"{a['cpu_ms_per_step']:>9.1f} {b['step']['p50_ms']:>8.0f} {b['step']['p95_ms']:>8.0f} "
            f"{b['cpu_ms_per_step']:>8.1f} {b['step']['p50_ms'] / a['step']['p50_ms']:>5.2f}x "
            f"{b['cpu_ms_per_step'] / max(a['cpu_ms_per_step'], 1e-9):>5.2f}x")
    lines.append(f"settling, ms: quiet = the program's quiet window; first/last = first and last change after the "
                 f"action in a {WATCH_SECONDS:g} s watch (p50; last max = the latest seen), gap max = the longest "
                 f"pause between changes of one step; step and cpu/step (env process CPU) by the {new} rule, "
                 f"old = the {old} rule, x = old over new")
    return "\n".join(lines)
