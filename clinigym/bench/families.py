"""The reset of task families' instances, beside the reset of a fixed scenario: in every
`clinigym bench`, and alone with `clinigym bench --families`.

On each program with families, on one program instance: `env.reset(seed=s)` of its first
family at seeds drawn afresh (each draws its cohort, writes its studies and loads them into
the program), against `env.reset(seed=0)` of the program's first scenario (the same restart
without generated studies). Both include the scenario's set-up actions and the settle.
"""
from __future__ import annotations

import secrets
import time
from pathlib import Path

from clinigym.bench.per_program import finish, measure_each
from clinigym.bench.settle import ms_stats
from clinigym.envs.steps import StepsEnv
from clinigym.runtime.backends import make_backend
from clinigym.spec.apps import load_app
from clinigym.spec.scenarios import all_scenarios
from clinigym.spec.task_families import all_families

__all__ = ["AIMS", "bench_family_reset", "format_families", "run_families_bench"]

# ms, the reset's p50 aimed at: desktop programs 1.5 s, web programs and GNU Health 3 s.
AIMS = {"web": 3000.0, "desktop": 1500.0, "gnuhealth": 3000.0}


def aim(name: str) -> float:
    app = load_app(name)
    return AIMS["gnuhealth"] if name == "gnuhealth" else AIMS["web" if app.dom_port else "desktop"]


def _resets(env: StepsEnv, seeds: list[int]) -> list[float]:
    times = []
    for seed in seeds:
        t = time.monotonic()
        env.reset(seed=seed)
        times.append(time.monotonic() - t)
    return times


def bench_family_reset(name: str, kind: str, repeats: int) -> dict | None:
    """The first family's resets at `repeats` fresh seeds and the first scenario's `repeats`
    resets, on one program instance (None: the program has no family)."""
    family = next((f for f in all_families() if f.app == name), None)
    if family is None:
        return None
    scenario = next(s for s in all_scenarios() if s.app == name)
    backend = make_backend(load_app(name), kind)
    try:
        fixed = StepsEnv(scenario, backend=backend)
        fixed.reset(seed=0)   # the cold start (pristine state, container) is not a reset
        baseline = _resets(fixed, [0] * repeats)
        drawn = StepsEnv(family, backend=backend)
        instances = _resets(drawn, [secrets.randbelow(2**31) for _ in range(repeats)])
    finally:
        backend.close()
    return {"app": name, "backend": kind, "family": family.key, "scenario": scenario.key,
            "instance_reset": ms_stats(instances), "scenario_reset": ms_stats(baseline), "aim_p50_ms": aim(name)}


def format_families(rows: list[dict]) -> str:
    lines = [f"{'program':<10} {'backend':<7} {'family':<36} {'reset p50':>10} {'reset p95':>10} "
             f"{'fixed p50':>10} {'ratio':>6} {'aim':>6}"]
    for r in rows:
        inst, fixed = r["instance_reset"], r["scenario_reset"]
        met = "yes" if inst["p50_ms"] <= r["aim_p50_ms"] else "no"
        lines.append(f"{r['app']:<10} {r['backend']:<7} {r['family'].split('/')[1]:<36} {inst['p50_ms']:>10.0f} "
                     f"{inst['p95_ms']:>10.0f} {fixed['p50_ms']:>10.0f} {inst['p50_ms'] / fixed['p50_ms']:>5.2f}x "
                     f"{met:>6}")
    lines.append("reset = env.reset of a family's instance at a fresh seed (its cohort drawn, its studies "
                 "written and loaded), fixed = the program's first scenario's reset, ratio = reset p50 over "
                 "fixed p50 (ms); aim = reset p50 <= 3000 ms on web programs and GNU Health, 1500 ms on "
                 "desktop programs")
    return "\n".join(lines)


def run_families_bench(apps: list[str], repeats: int, out: Path | None, backends: list[str]) -> int:
    """`clinigym bench --families`: every program with families, on each backend it runs on."""
    result: dict = {"repeats": repeats, "programs": [], "errors": []}
    measure_each(apps, backends, lambda name, kind: bench_family_reset(name, kind, repeats),
                 result["programs"], result["errors"])
    print(format_families(result["programs"]))
    return finish(result, out)
