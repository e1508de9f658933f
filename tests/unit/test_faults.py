"""Finding a run's workers and aiming a fault (clinigym.bench.faults), on real processes."""
from __future__ import annotations

import random
import subprocess
import sys

import pytest

from clinigym.bench.faults import Target, TargetGone, find_target, kill_program, kill_worker, workers
from clinigym.runtime.waiting import wait_for

# A process with two spawned multiprocessing children (pool workers, as `clinigym run
# --workers 2` starts them) that sleep until it ends.
POOL = """
import multiprocessing, sys, time
if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=time.sleep, args=(60,)) for _ in range(2)]
    for p in procs:
        p.start()
    print(" ".join(str(p.pid) for p in procs), flush=True)
    sys.stdin.read()
"""


def test_a_pools_workers_are_its_spawned_children_and_a_lone_run_is_its_own_worker(tmp_path):
    script = tmp_path / "pool.py"
    script.write_text(POOL)
    pool = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    lone = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        children = sorted(int(p) for p in pool.stdout.readline().split())
        assert sorted(workers(pool.pid)) == children      # not its resource tracker
        assert workers(lone.pid) == [lone.pid]
        assert find_target(lone.pid) is None               # it runs no program and no display
        kill_worker(Target(children[0], "local"), random.Random(0), 0)
        wait_for(lambda: sorted(workers(pool.pid)) == children[1:], 10, "the killed worker gone")
    finally:
        for proc in (pool, lone):
            proc.kill()
            proc.wait()


def test_a_fault_whose_target_ended_says_so():
    done = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    done.wait()
    with pytest.raises(TargetGone, match=f"process group {done.pid} has ended"):
        kill_program(Target(1, "local", groups=[done.pid]), random.Random(0), 0)
    with pytest.raises(TargetGone, match=f"process {done.pid} has ended"):
        kill_worker(Target(done.pid, "local"), random.Random(0), 0)
