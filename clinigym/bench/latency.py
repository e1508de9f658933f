"""`clinigym bench`: latency distributions and memory per program, with an idle-display
baseline measured in the same command (ratios are against it), and the per-step safety
audit's time in the goal mode."""
from __future__ import annotations

import time
from pathlib import Path

from clinigym.bench.families import bench_family_reset, format_families
from clinigym.bench.per_program import finish, measure_each
from clinigym.bench.settle import bench_settle, format_settle, ms_stats, oracle_steps
from clinigym.bench.tree import bench_a11y, format_tree
from clinigym.envs.goal import GoalEnv
from clinigym.envs.steps import StepsEnv
from clinigym.runtime.backends import Backend, make_backend
from clinigym.runtime.display import DisplaySession
from clinigym.spec.apps import load_app
from clinigym.spec.scenarios import all_scenarios


def bench_baseline(repeats: int) -> dict:
    """An idle display: what a screenshot and a click-to-settled cost with no program."""
    display = DisplaySession()
    try:
        grabs, steps = [], []
        for _ in range(repeats):
            t = time.monotonic()
            _ = display.grab().rgb   # the grab and the conversion an observation costs
            grabs.append(time.monotonic() - t)
        for i in range(repeats):
            t = time.monotonic()
            display.click(10 + i, 10)
            display.wait_settled()
            steps.append(time.monotonic() - t)
        return {"screenshot": ms_stats(grabs), "step": ms_stats(steps)}
    finally:
        display.close()


def _oracle_steps(env: StepsEnv, repeats: int, phases: dict[str, list[float]], seed: int = 0) -> None:
    for step in oracle_steps(env, repeats, seed=seed):
        for k in phases:
            phases[k].append(step["timings"].get(k, 0.0))


AUDIT_EPISODES = 2   # oracle episodes for the audit's time: each is a reset, and the audit varies little


def bench_audit(name: str, backend: Backend) -> dict | None:
    """The per-step audit's time (`info["timings"]["audit"]`) over every step but the ending of
    oracle episodes in the goal mode, on the program's first scenario with a goal (None: none)."""
    scenario = next((s for s in all_scenarios() if s.app == name and s.goal is not None), None)
    if scenario is None:
        return None
    env = GoalEnv(scenario, "goal", backend=backend)
    try:
        steps = oracle_steps(env, AUDIT_EPISODES)
    finally:
        env.close()   # the backend stays open: it is the caller's
    return {"scenario": scenario.key, **ms_stats([s["timings"]["audit"] for s in steps if "audit" in s["timings"]])}


def bench_app(name: str, repeats: int, kind: str = "local", watch_all: bool = False) -> dict:
    app = load_app(name)
    scenarios = [s for s in all_scenarios() if s.app == name]
    scenario = scenarios[0]
    backend = make_backend(app, kind)
    env = StepsEnv(scenario, backend=backend)
    try:
        resets, recreates, grabs = [], [], []
        phases: dict[str, list[float]] = {"act": [], "settle": [], "terminate": [], "total": []}
        # The first reset also prepares the pristine state (and starts a container): a cold
        # start, reported apart so it does not weigh on the restart-in-place figures.
        t = time.monotonic()
        backend.reset()
        cold_start = time.monotonic() - t
        for _ in range(repeats):
            t = time.monotonic()
            backend.reset()          # kill, restore pristine state, relaunch, ready, settled
            resets.append(time.monotonic() - t)
        if kind == "docker":         # the fallback: a new container, then the same reset
            for _ in range(min(repeats, 5)):
                t = time.monotonic()
                backend.recreate()
                backend.reset()
                recreates.append(time.monotonic() - t)
        _oracle_steps(env, repeats, phases)
        for _ in range(repeats):
            t = time.monotonic()
            _ = backend.display.grab().rgb
            grabs.append(time.monotonic() - t)
        memory = backend.memory_bytes() / 2**20
        # The OCR agent's time per step on this program's first screen, no cache.
        from clinigym.agents.ocr import OcrAgent
        ocr = OcrAgent(env.agent_context(), cache_size=0)
        obs, info = env.reset(seed=0)
        ocr_times = []
        for _ in range(min(repeats, 5)):
            t = time.monotonic()
            ocr.act(obs, info)
            ocr_times.append(time.monotonic() - t)
        result = {"scenario": scenario.key, "backend": kind, "screenshot": ms_stats(grabs),
                  "cold_start_ms": cold_start * 1000, "reset": ms_stats(resets),
                  "step": {k: ms_stats(v) for k, v in phases.items()},
                  "rss_mb": memory, "ocr_agent_step": ms_stats(ocr_times), "audit_step": bench_audit(name, backend),
                  "quiet_s": app.settle.quiet, "idle_quiet_s": app.settle.idle_quiet,
                  "settle_rule": bench_settle(env, repeats, scenarios if watch_all else None)}
        if recreates:
            result["recreate"] = ms_stats(recreates)
        result["a11y"] = bench_a11y(name, kind, repeats)
        result["family_reset"] = bench_family_reset(name, kind, repeats)
        return result
    finally:
        env.close()
        backend.close()


def bench_side_by_side(name: str, kind: str, repeats: int, limit: int = 8) -> dict:
    """Environments of one program stepping at the same time, one more each round, until
    the step p50 is twice that of a single environment (or `limit` is reached)."""
    from concurrent.futures import ThreadPoolExecutor
    scenario = next(s for s in all_scenarios() if s.app == name)
    envs: list[StepsEnv] = []
    rounds = []
    try:
        for n in range(1, limit + 1):
            envs.append(StepsEnv(scenario, backend=kind))
            envs[-1].reset(seed=0)   # start it before timing
            per_env = [{"total": []} for _ in envs]
            with ThreadPoolExecutor(len(envs)) as pool:
                list(pool.map(lambda pair: _oracle_steps(pair[0], repeats, pair[1]), zip(envs, per_env)))
            steps = [t for phases in per_env for t in phases["total"]]
            rounds.append({"environments": n, "step": ms_stats(steps)})
            if rounds[-1]["step"]["p50_ms"] > 2 * rounds[0]["step"]["p50_ms"]:
                break
    finally:
        for env in envs:
            env.close()
    fit = [r["environments"] for r in rounds if r["step"]["p50_ms"] <= 2 * rounds[0]["step"]["p50_ms"]]
    return {"app": name, "backend": kind, "rounds": rounds, "max_before_doubling": max(fit),
            "limit_reached": len(rounds) == limit and fit[-1] == limit}


def format_bench(result: dict) -> str:
    base = result["baseline"]
    lines = [f"{'program':<12} {'backend':<7} {'shot p50':>9} {'step p50':>9} {'step p95':>9} "
             f"{'act':>7} {'settle':>7} {'reset p50':>10} {'reset p95':>10} {'recreate p50/p95':>17} "
             f"{'mem MB':>7} {'step/base':>9} {'OCR p50':>8} {'OCR p95':>8} {'audit p50/p95':>14}"]
    lines.append(f"{'(idle X)':<12} {'local':<7} {base['screenshot']['p50_ms']:>9.1f} "
                 f"{base['step']['p50_ms']:>9.0f} {base['step']['p95_ms']:>9.0f}")
    for r in result["apps"]:
        s = r["step"]
        ratio = s["total"]["p50_ms"] / base["step"]["p50_ms"]
        rec = r.get("recreate")
        recreate = f"{rec['p50_ms']:.0f}/{rec['p95_ms']:.0f}" if rec else "-"
        aud = r.get("audit_step")
        audit = f"{aud['p50_ms']:.1f}/{aud['p95_ms']:.1f}" if aud and aud["n"] else "-"
        lines.append(
            f"{r['app']:<12} {r['backend']:<7} {r['screenshot']['p50_ms']:>9.1f} "
            f"{s['total']['p50_ms']:>9.0f} {s['total']['p95_ms']:>9.0f} {s['act']['p50_ms']:>7.1f} "
            f"{s['settle']['p50_ms']:>7.0f} {r['reset']['p50_ms']:>10.0f} {r['reset']['p95_ms']:>10.0f} "
            f"{recreate:>17} {r['rss_mb']:>7.0f} {ratio:>8.2f}x "
            f"{r['ocr_agent_step']['p50_ms']:>8.0f} {r['ocr_agent_step']['p95_ms']:>8.0f} {audit:>14}")
    trees = [(r["app"], r["backend"], r["a11y"], r["step"]["total"]) for r in result["apps"] if r.get("a11y")]
    if trees:
        lines += ["", format_tree(trees)]
    families = [r["family_reset"] for r in result["apps"] if r.get("family_reset")]
    if families:
        lines += ["", format_families(families)]
    for sc in result.get("side_by_side", []):
        rounds = ", ".join(f"{r['environments']}: {r['step']['p50_ms']:.0f}" for r in sc["rounds"])
        lines.append(f"side by side, {sc['app']} on {sc['backend']}: step p50 ms by environments ({rounds}); "
                     f"{sc['max_before_doubling']} run before the step p50 doubles"
                     + (" (limit reached)" if sc["limit_reached"] else ""))
    lines.append("times in ms (p50/p95 over all steps of repeated oracle episodes); "
                 "step/base = step p50 over the idle-display click-to-settled p50; reset = restart in "
                 "place, recreate = new container + reset; mem = RSS (local) or container memory "
                 "without page cache (docker); OCR = the OCR agent's act() on the first screen, uncached; "
                 "audit = the per-step safety audit of a goal-mode oracle episode (its records read and "
                 "compared), over every action but the ending one")
    return "\n".join(lines)


def run_bench(apps: list[str], repeats: int, out: Path | None, backends: list[str] = ("local",),
              side_by_side: str | None = "dicomscope", watch_all: bool = False) -> int:
    result = {"repeats": repeats, "baseline": bench_baseline(repeats), "apps": [], "errors": []}
    measure_each(apps, backends, lambda name, kind: bench_app(name, repeats, kind, watch_all) | {"app": name},
                 result["apps"], result["errors"])
    if side_by_side:
        result["side_by_side"] = [bench_side_by_side(side_by_side, kind, max(2, repeats // 3))
                                  for kind in backends]
    print(format_bench(result))
    print()
    print(format_settle(result["apps"]))
    return finish(result, out)
