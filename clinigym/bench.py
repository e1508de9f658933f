"""`clinigym bench`: latency distributions and memory per program, with an idle-display
baseline measured in the same command (ratios are against it)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from clinigym.agents.oracle import OracleAgent
from clinigym.apps import load_app
from clinigym.backends.local import LocalBackend
from clinigym.display import DisplaySession
from clinigym.envs.live import LiveEnv
from clinigym.scenarios import all_scenarios


def _dist(values: list[float]) -> dict:
    a = np.asarray(values) * 1000
    return {"n": len(values), "p50_ms": float(np.percentile(a, 50)), "p95_ms": float(np.percentile(a, 95))}


def rss_of_groups(pgids: set[int]) -> int:
    """Resident memory (bytes) of every process in the given process groups."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.getpgid(int(entry)) not in pgids:
                continue
            for line in open(f"/proc/{entry}/status"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except (OSError, ProcessLookupError):
            continue
    return total


def bench_baseline(repeats: int) -> dict:
    """An idle display: what a screenshot and a click-to-settled cost with no program."""
    display = DisplaySession()
    try:
        grabs, steps = [], []
        for _ in range(repeats):
            t = time.monotonic()
            display.grab().rgb
            grabs.append(time.monotonic() - t)
        for i in range(repeats):
            t = time.monotonic()
            display.click(10 + i, 10)
            display.wait_settled()
            steps.append(time.monotonic() - t)
        return {"screenshot": _dist(grabs), "step": _dist(steps)}
    finally:
        display.close()


def bench_app(name: str, repeats: int) -> dict:
    app = load_app(name)
    scenario = next(s for s in all_scenarios() if s.app == name)
    backend = LocalBackend(app)
    env = LiveEnv(scenario, backend=backend)
    oracle = OracleAgent(env)
    try:
        resets, grabs = [], []
        phases: dict[str, list[float]] = {"inject": [], "settle": [], "capture": [], "total": []}
        for _ in range(repeats):
            t = time.monotonic()
            backend.reset()          # kill, restore pristine state, relaunch, ready, settled
            resets.append(time.monotonic() - t)
        for i in range(repeats):
            obs, info = env.reset(seed=i)
            done = False
            while not done:
                obs, _, term, trunc, info = env.step(oracle.act(obs, info))
                done = term or trunc
                for k in phases:
                    phases[k].append(info["timings"].get(k, 0.0))
        for _ in range(repeats):
            t = time.monotonic()
            backend.display.grab().rgb
            grabs.append(time.monotonic() - t)
        pgids = backend.process_groups()
        rss = rss_of_groups(pgids) / 2**20
        # The OCR agent's time per step on this program's first screen, no cache.
        from clinigym.agents.ocr import OcrAgent
        ocr = OcrAgent(env, cache_size=0)
        obs, info = env.reset(seed=0)
        ocr_times = []
        for _ in range(min(repeats, 5)):
            t = time.monotonic()
            ocr.act(obs, info)
            ocr_times.append(time.monotonic() - t)
        return {"scenario": scenario.key, "screenshot": _dist(grabs), "reset": _dist(resets),
                "step": {k: _dist(v) for k, v in phases.items()}, "rss_mb": rss,
                "ocr_agent_step": _dist(ocr_times)}
    finally:
        env.close()
        backend.close()


def format_bench(result: dict) -> str:
    base = result["baseline"]
    lines = [f"{'program':<12} {'shot p50':>9} {'shot p95':>9} {'step p50':>9} {'step p95':>9} "
             f"{'inject':>7} {'settle':>7} {'capture':>7} {'reset p50':>10} {'reset p95':>10} "
             f"{'RSS MB':>7} {'step/base':>9} {'OCR p50':>8} {'OCR p95':>8}"]
    lines.append(f"{'(idle X)':<12} {base['screenshot']['p50_ms']:>9.1f} {base['screenshot']['p95_ms']:>9.1f} "
                 f"{base['step']['p50_ms']:>9.0f} {base['step']['p95_ms']:>9.0f}")
    for name, r in result["apps"].items():
        s = r["step"]
        ratio = s["total"]["p50_ms"] / base["step"]["p50_ms"]
        lines.append(
            f"{name:<12} {r['screenshot']['p50_ms']:>9.1f} {r['screenshot']['p95_ms']:>9.1f} "
            f"{s['total']['p50_ms']:>9.0f} {s['total']['p95_ms']:>9.0f} {s['inject']['p50_ms']:>7.1f} "
            f"{s['settle']['p50_ms']:>7.0f} {s['capture']['p50_ms']:>7.1f} {r['reset']['p50_ms']:>10.0f} "
            f"{r['reset']['p95_ms']:>10.0f} {r['rss_mb']:>7.0f} {ratio:>8.2f}x "
            f"{r['ocr_agent_step']['p50_ms']:>8.0f} {r['ocr_agent_step']['p95_ms']:>8.0f}")
    lines.append("times in ms (p50/p95 over all steps of repeated oracle episodes); "
                 "step/base = step p50 over the idle-display click-to-settled p50; "
                 "OCR = the OCR agent's act() on the first screen, uncached")
    return "\n".join(lines)


def run_bench(apps: list[str], repeats: int, out: Path | None) -> int:
    result = {"repeats": repeats, "baseline": bench_baseline(repeats),
              "apps": {name: bench_app(name, repeats) for name in apps}}
    print(format_bench(result))
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2))
    return 0
