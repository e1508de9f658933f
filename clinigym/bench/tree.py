"""The accessibility tree's read per observation, beside the step: in every `clinigym bench`,
and alone with `clinigym bench --tree` (every program with a tree, on the backends asked).

Over the oracle's steps of a program's first scenario observed as ``screenshot+a11y``, on a
program instance of its own with accessibility on: the read (`info["timings"]["a11y"]`),
the step's total with it, and that total against the same scenario's steps observed as
the screenshot alone ("vs off"). A scenario whose targets name elements runs its program
with the bridge on in both; the ratio is then the cost of reading the tree each step.
"""
from __future__ import annotations

from pathlib import Path

from clinigym.bench.per_program import finish, measure_each
from clinigym.bench.settle import ms_stats, oracle_steps
from clinigym.envs.steps import StepsEnv
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


def _tree_and_off(name: str, kind: str, repeats: int) -> dict | None:
    a11y = bench_a11y(name, kind, repeats)
    if a11y is None:
        return None
    _, off, _ = _steps(name, kind, repeats, "screenshot")
    return {"app": name, "backend": kind, "a11y": a11y, "step_off": ms_stats([s["timings"]["total"] for s in off])}


def run_tree_bench(apps: list[str], repeats: int, out: Path | None, backends: list[str]) -> int:
    """`clinigym bench --tree`: every program with a tree, on each backend it runs on."""
    result: dict = {"repeats": repeats, "programs": [], "errors": []}
    measure_each(apps, backends, lambda name, kind: _tree_and_off(name, kind, repeats),
                 result["programs"], result["errors"])
    print(format_tree([(r["app"], r["backend"], r["a11y"], r["step_off"]) for r in result["programs"]]))
    return finish(result, out)
