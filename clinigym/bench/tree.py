"""The accessibility tree's read per observation, beside the step: in every `clinigym bench`,
and alone with `clinigym bench --tree` (every program with a tree, on the backends asked).

Over the oracle's steps of a program's first scenario observed as ``screenshot+a11y``, on a
program instance of its own with accessibility on: the read (`info["timings"]["a11y"]`),
the step's total with it, and that total against the same scenario's steps observed as
the screenshot alone ("vs off"). A scenario whose targets name elements runs its program
with the bridge on in both; the ratio is then the cost of reading the tree each step.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from clinigym.bench.settle import ms_stats, oracle_steps
from clinigym.envs.steps import StepsEnv
from clinigym.runtime.backends.local import host_release
from clinigym.spec.apps import load_app
from clinigym.spec.scenarios import all_scenarios

__all__ = ["AIM", "bench_a11y", "format_tree", "run_tree_bench"]

AIM = (150.0, 400.0)   # ms: the read's p50 and p95 aimed at, per step


def _steps(name: str, kind: str, repeats: int, obs_mode: str) -> tuple[str, list[dict], int | None]:
    scenario = next(s for s in all_scenarios() if s.app == name)
    env = StepsEnv(scenario, backend=kind, obs_mode=obs_mode)
    try:
        steps = oracle_steps(env, repeats)
        elements = len(env.backend.elements()) if obs_mode != "screenshot" else None
    finally:
        env.close()
    return scenario.key, steps, elements


def bench_a11y(name: str, kind: str, repeats: int) -> dict | None:
    """The read and the step with it over `repeats` oracle episodes (None: the program has no
    accessibility source)."""
    if load_app(name).accessibility is None:
        return None
    key, steps, elements = _steps(name, kind, repeats, "screenshot+a11y")
    return {"scenario": key, "read": ms_stats([s["timings"]["a11y"] for s in steps]),
            "step": ms_stats([s["timings"]["total"] for s in steps]), "elements_last_screen": elements}


def _row(app: str, kind: str, a11y: dict, off_step: dict) -> str:
    read, step = a11y["read"], a11y["step"]
    met = "yes" if read["p50_ms"] <= AIM[0] and read["p95_ms"] <= AIM[1] else "no"
    return (f"{app:<12} {kind:<7} {read['p50_ms']:>9.0f} {read['p95_ms']:>9.0f} {step['p50_ms']:>9.0f} "
            f"{step['p95_ms']:>9.0f} {step['p50_ms'] / off_step['p50_ms']:>6.2f}x {met:>6}")


def format_tree(rows: list[tuple[str, str, dict, dict]]) -> str:
    """A table of (program, backend, `bench_a11y`'s result, the step without the tree)."""
    lines = [f"{'program':<12} {'backend':<7} {'tree p50':>9} {'tree p95':>9} {'step p50':>9} "
             f"{'step p95':>9} {'vs off':>7} {'aim':>6}  (steps observed as screenshot+a11y)"]
    lines += [_row(*row) for row in rows]
    lines.append(f"tree = the accessibility tree's read per observation, step = the step's total with "
                 f"it (ms); vs off = that step p50 over the step p50 observed as the screenshot alone; "
                 f"aim = read p50 <= {AIM[0]:.0f} ms and p95 <= {AIM[1]:.0f} ms")
    return "\n".join(lines)


def run_tree_bench(apps: list[str], repeats: int, out: Path | None, backends: list[str]) -> int:
    """`clinigym bench --tree`: every program with a tree, on each backend it runs on."""
    result: dict = {"repeats": repeats, "programs": [], "errors": []}
    for kind in backends:
        for name in apps:
            app = load_app(name)
            if app.accessibility is None or kind not in app.backends or (
                    kind == "local" and app.release != host_release()):
                continue   # no tree, or not where it runs (a program of another Debian release)
            try:
                a11y = bench_a11y(name, kind, repeats)
                _, off, _ = _steps(name, kind, repeats, "screenshot")
            except Exception as exc:  # noqa: BLE001 - one broken program must not lose the others' numbers
                result["errors"].append({"app": name, "backend": kind, "error": f"{type(exc).__name__}: {exc}"})
                continue
            result["programs"].append({"app": name, "backend": kind, "a11y": a11y,
                                       "step_off": ms_stats([s["timings"]["total"] for s in off])})
    print(format_tree([(r["app"], r["backend"], r["a11y"], r["step_off"]) for r in result["programs"]]))
    for err in result["errors"]:
        print(f"error: {err['app']} on {err['backend']}: {err['error'][:500]}", file=sys.stderr)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2))
    return 1 if result["errors"] else 0
