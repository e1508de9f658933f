"""`clinigym bench --throughput`: episodes and steps per minute of the oracle on a fixed
mix of scenarios, run by `clinigym run` with 1, 2, 4 and 8 workers and on a Ray cluster of
two loopback nodes, side by side in one command (ratios are to 1 worker), with the memory
each environment adds."""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

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


def bench_throughput(workers: Sequence[int] = (1, 2, 4, 8), ray_workers: int | None = 4) -> dict:
    run = [*CLINIGYM, "run", "--scenario", *MIX, "--per-program", str(PER_PROGRAM), "--episodes", str(EPISODES),
           "--agent", "oracle", "--no-progress", "--json"]
    result: dict = {"mix": MIX, "per_program": PER_PROGRAM, "episodes": EPISODES, "pool": [], "ray": None}
    with tempfile.TemporaryDirectory(prefix="clinigym-throughput-") as tmp:
        for n in workers:
            out = Path(tmp) / f"pool-{n}"
            result["pool"].append(measure([*run, "--workers", str(n), "--out", str(out)], out, n))
        if ray_workers:
            from clinigym.run.loopback_cluster import LoopbackCluster
            with LoopbackCluster(nodes=2, cpus=max(1, ray_workers // 2)) as cluster:
                out = Path(tmp) / "ray"
                argv = cluster.command([*run, "--ray", cluster.address, "--workers", str(ray_workers),
                                        "--out", str(out)])
                result["ray"] = measure(argv, out, ray_workers)
    base = result["pool"][0]["episodes_per_min"]
    for r in [*result["pool"], *([result["ray"]] if result["ray"] else [])]:
        r["ratio"] = r["episodes_per_min"] / base
    if result["ray"]:
        same = next((r for r in result["pool"] if r["environments"] == ray_workers), None)
        if same:
            result["ray"]["ratio_to_pool"] = result["ray"]["episodes_per_min"] / same["episodes_per_min"]
            result["ray"]["same_outcomes_as_pool"] = result["ray"]["outcomes"] == same["outcomes"]
    return result


def format_throughput(result: dict) -> str:
    lines = [f"{'run':<14} {'episodes':>8} {'steps':>6} {'seconds':>8} {'ep/min':>7} {'steps/min':>9} "
             f"{'x 1 worker':>10} {'MB/env':>7} {'all right':>9}"]
    rows = [(f"{r['environments']} worker{'s' if r['environments'] > 1 else ''}", r) for r in result["pool"]]
    if result["ray"]:
        rows.append((f"ray, {result['ray']['environments']} actors", result["ray"]))
    for name, r in rows:
        lines.append(f"{name:<14} {r['episodes']:>8} {r['steps']:>6} {r['seconds']:>8.1f} "
                     f"{r['episodes_per_min']:>7.1f} {r['steps_per_min']:>9.1f} {r['ratio']:>9.2f}x "
                     f"{r['mb_per_environment']:>7.0f} {'yes' if r['all_correct'] else 'NO':>9}")
    ray = result["ray"]
    if ray and "ratio_to_pool" in ray:
        lines.append(f"ray / pool with {ray['environments']}: {ray['ratio_to_pool']:.2f}x; same outcomes: "
                     f"{'yes' if ray['same_outcomes_as_pool'] else 'NO'}")
    lines.append(f"the oracle on {', '.join(result['mix'])} (first {result['per_program']} scenarios each, "
                 f"{result['episodes']} episodes each) with `clinigym run`; the Ray cluster is two nodes in a "
                 "loopback-only network namespace; MB/env = the lowest available memory during the run "
                 "below the level before it, per environment")
    return "\n".join(lines)


def run_throughput(out: Path | None) -> int:
    result = bench_throughput()
    print(format_throughput(result))
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2))
    return 0 if all(r["all_correct"] for r in [*result["pool"], *([result["ray"]] if result["ray"] else [])]) else 1
