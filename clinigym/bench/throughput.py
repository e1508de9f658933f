"""`clinigym bench --throughput`: episodes and steps per minute of the oracle on a fixed
mix of scenarios, run by `clinigym run` with 1, 2, 4 and 8 workers and on a Ray cluster of
two loopback nodes, side by side in one command and in rounds (ratios are to the round's
1 worker), with the memory each environment adds."""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from clinigym.bench.per_program import save_json
from clinigym.recording import read_episode

MIX = ["dicomscope/*", "orthanc/*"]   # a Java desktop program and a web UI with its server
PER_PROGRAM = 4
EPISODES = 2                         # 16 episodes: enough for 8 workers
CLINIGYM = [sys.executable, "-m", "clinigym.cli"]


def _available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise OSError("no MemAvailable in /proc/meminfo")


class _LowestMemory(threading.Thread):
    """The lowest available memory seen while a run goes (sampled twice a second)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.lowest = _available_mb()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            self.lowest = min(self.lowest, _available_mb())


def measure(argv: Sequence[str], out: Path, environments: int) -> dict:
    """Run `argv` (a `clinigym run` writing to `out`) and measure it."""
    before = _available_mb()
    sampler = _LowestMemory()
    sampler.start()
    t = time.monotonic()
    done = subprocess.run(list(argv), capture_output=True, text=True)
    seconds = time.monotonic() - t
    sampler.stop.set()
    sampler.join()
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[-6:])} failed ({done.returncode}): {done.stderr[-1500:]}")
    episodes = [read_episode(p) for p in sorted((out / "episodes").iterdir())]
    steps = sum(len(e.steps) for e in episodes)
    outcomes = {e.header.scenario + f"#{i}": [s.correct for s in e.steps] for i, e in enumerate(episodes)}
    return {"environments": environments, "seconds": seconds, "episodes": len(episodes), "steps": steps,
            "episodes_per_min": 60 * len(episodes) / seconds, "steps_per_min": 60 * steps / seconds,
            "mb_per_environment": max(0.0, before - sampler.lowest) / environments,
            "all_correct": all(all(v) for v in outcomes.values()), "outcomes": outcomes}


def bench_throughput(workers: Sequence[int] = (1, 2, 4, 8), ray_workers: int | None = 4, rounds: int = 3) -> dict:
    """`rounds` rounds of every run (the pool with each number of workers, then Ray on a fresh
    cluster): each round's ratios are to its own 1-worker run, so that a machine whose speed
    drifts weighs on both sides of a ratio."""
    run = [*CLINIGYM, "run", "--scenario", *MIX, "--per-program", str(PER_PROGRAM), "--episodes", str(EPISODES),
           "--agent", "oracle", "--no-progress", "--json"]
    runs: list[dict] = []
    for round_ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="clinigym-throughput-") as tmp:
            for n in workers:
                out = Path(tmp) / f"pool-{n}"
                runs.append({"round": round_, "kind": "pool",
                             **measure([*run, "--workers", str(n), "--out", str(out)], out, n)})
            if ray_workers:
                from clinigym.run.loopback_cluster import LoopbackCluster
                with LoopbackCluster(nodes=2, cpus=max(1, ray_workers // 2)) as cluster:
                    out = Path(tmp) / "ray"
                    argv = cluster.command([*run, "--ray", cluster.address, "--workers", str(ray_workers),
                                            "--out", str(out)])
                    runs.append({"round": round_, "kind": "ray", **measure(argv, out, ray_workers)})
    return {"mix": MIX, "per_program": PER_PROGRAM, "episodes": EPISODES, **summarize(runs)}


def _spread(values: Sequence[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarize(runs: Sequence[dict]) -> dict:
    """One row per run kind and number of environments: medians over the rounds; each round's
    ratio to that round's 1-worker pool run (and Ray's to the pool with as many workers) as
    median, min and max. The runs themselves are kept as they are."""
    def at(kind: str, n: int, round_: int) -> dict | None:
        return next((r for r in runs if (r["kind"], r["environments"], r["round"]) == (kind, n, round_)), None)

    rows: dict[str, list[dict]] = {"pool": [], "ray": []}
    for kind, n in dict.fromkeys((r["kind"], r["environments"]) for r in runs):
        mine = [r for r in runs if (r["kind"], r["environments"]) == (kind, n)]
        ratios = [r["episodes_per_min"] / base["episodes_per_min"] for r in mine
                  if (base := at("pool", 1, r["round"]))]
        row = {"environments": n, "rounds": len(mine), "episodes": mine[0]["episodes"], "steps": mine[0]["steps"],
               **{k: statistics.median(r[k] for r in mine)
                  for k in ("seconds", "episodes_per_min", "steps_per_min", "mb_per_environment")},
               "ratio": _spread(ratios) if ratios else None,
               "all_correct": all(r["all_correct"] for r in mine)}
        if kind == "ray":
            pools = [(r, p) for r in mine if (p := at("pool", n, r["round"]))]
            if pools:
                row["ratio_to_pool"] = _spread([r["episodes_per_min"] / p["episodes_per_min"] for r, p in pools])
                row["same_outcomes_as_pool"] = all(r["outcomes"] == p["outcomes"] for r, p in pools)
        rows[kind].append(row)
    return {"pool": rows["pool"], "ray": rows["ray"][0] if rows["ray"] else None, "runs": list(runs)}


def _x(spread: dict | None) -> str:
    if spread is None:
        return "-"
    if spread["min"] == spread["max"]:
        return f"{spread['median']:.2f}x"
    return f"{spread['median']:.2f}x ({spread['min']:.2f}-{spread['max']:.2f})"


def format_throughput(result: dict) -> str:
    lines = [f"{'run':<14} {'episodes':>8} {'steps':>6} {'seconds':>8} {'ep/min':>7} {'steps/min':>9} "
             f"{'x 1 worker (min-max)':<21} {'MB/env':>7} {'all right':>9}"]
    rows = [(f"{r['environments']} worker{'s' if r['environments'] > 1 else ''}", r) for r in result["pool"]]
    if result["ray"]:
        rows.append((f"ray, {result['ray']['environments']} actors", result["ray"]))
    for name, r in rows:
        lines.append(f"{name:<14} {r['episodes']:>8} {r['steps']:>6} {r['seconds']:>8.1f} "
                     f"{r['episodes_per_min']:>7.1f} {r['steps_per_min']:>9.1f} {_x(r['ratio']):<21} "
                     f"{r['mb_per_environment']:>7.0f} {'yes' if r['all_correct'] else 'NO':>9}")
    ray = result["ray"]
    if ray and "ratio_to_pool" in ray:
        lines.append(f"ray / pool with {ray['environments']}: {_x(ray['ratio_to_pool'])}; same outcomes: "
                     f"{'yes' if ray['same_outcomes_as_pool'] else 'NO'}")
    rounds = max((r["rounds"] for _, r in rows), default=0)
    lines.append(f"the oracle on {', '.join(result['mix'])} (first {result['per_program']} scenarios each, "
                 f"{result['episodes']} episodes each) with `clinigym run`, {rounds} round(s) of every run: "
                 "seconds, rates and memory are medians, each ratio is to its own round's 1-worker run; "
                 "the Ray cluster is two nodes in a loopback-only network namespace; MB/env = the lowest "
                 "available memory during the run below the level before it, per environment")
    return "\n".join(lines)


def run_throughput(out: Path | None, rounds: int = 3) -> int:
    result = bench_throughput(rounds=rounds)
    print(format_throughput(result))
    save_json(result, out)
    return 0 if all(r["all_correct"] for r in result["runs"]) else 1
