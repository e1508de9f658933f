"""A pool run whose programs are in containers, stopped by SIGTERM mid-episode: within the
bound it exits, and no container, process, display lock or work folder of it is left."""
from __future__ import annotations

import os
import signal
import time

from footprint import BOUND, start, statuses, wait_mid_episode

from clinigym.bench.footprint import Footprint
from clinigym.run.cleanup import sweep
from clinigym.runtime.images import engine
from conftest import REPO

MIX = [REPO / "scenarios" / "dicomscope" / f for f in ("medspot-01-flip.yaml", "medspot-02-rotate.yaml")]


def test_a_stopped_pool_run_in_containers_leaves_nothing(tmp_path):
    proc = start(MIX, "--out", str(tmp_path), "--workers", "2", "--backend", "docker")
    footprint = Footprint(proc.pid, engine())
    try:
        wait_mid_episode(proc, tmp_path, footprint)
        assert len(footprint.containers) == 2 and footprint.locks      # one container per worker
        t = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=BOUND + 10)
        took = time.monotonic() - t
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert took < BOUND and footprint.gone_within(BOUND - took) == []
        assert None in statuses(tmp_path)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        sweep(set(footprint.procs))
