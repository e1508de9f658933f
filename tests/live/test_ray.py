"""`clinigym run --ray` on a real Ray cluster of two nodes (a head and a second `ray start`)
in a network namespace that has only loopback, so that nothing binds or sends to another
address: the run is complete though one actor is killed mid-run, the retried episode says
so, the episodes ran on both nodes, and the outcomes equal the local pool's."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from clinigym.recording import read_episode
from clinigym.run.loopback_cluster import LoopbackCluster
from clinigym.runtime.waiting import wait_for
from conftest import displays

pytestmark = pytest.mark.slow    # about 2:45 with its cluster: `make test-all`, beside the soak's test

BIN = Path(sys.executable).parent
RUN = ["--scenario", "dicomscope/*", "--per-program", "10", "--episodes", "2", "--agent", "oracle",
       "--no-progress", "--json"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[LoopbackCluster]:
    with LoopbackCluster(nodes=2, cpus=2) as c:
        yield c


def outcomes(run: Path) -> dict[int, tuple]:
    found = {}
    for folder in sorted((run / "episodes").iterdir()):
        e = read_episode(folder)
        found[int(folder.name[:4])] = (e.header.scenario, e.header.outcome.status,
                                       tuple(s.correct for s in e.steps))
    return found


def actors() -> list[int]:
    found = subprocess.run(["pgrep", "-f", "ray::EpisodeWorker"], capture_output=True, text=True)
    return [int(p) for p in found.stdout.split()]


def start_driver(cluster: LoopbackCluster, out: Path) -> subprocess.Popen:
    """`clinigym run --ray` on 2 actors, from the cluster's namespace."""
    return subprocess.Popen(cluster.command([str(BIN / "clinigym"), "run", *RUN, "--ray", cluster.address,
                                             "--workers", "2", "--out", str(out)]),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_episodes(driver: subprocess.Popen, out: Path, n: int) -> None:
    def done() -> int:
        return len(list((out / "episodes").iterdir())) if (out / "episodes").is_dir() else 0
    wait_for(lambda: done() >= n or driver.poll() is not None, 300, f"{n} episodes of the Ray run")
    assert driver.poll() is None, driver.communicate()


def test_ray_run_survives_a_killed_actor_and_equals_the_pool(cluster, tmp_path):
    ray_run, pool_run = tmp_path / "ray", tmp_path / "pool"
    before = displays()
    driver = start_driver(cluster, ray_run)
    try:
        # Kill one actor's process once a few episodes came back: its episode runs again.
        wait_for_episodes(driver, ray_run, 3)
        pids = actors()
        assert len(pids) == 2, pids
        os.kill(pids[0], signal.SIGKILL)
        out, err = driver.communicate(timeout=900)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.communicate()
    assert driver.returncode == 0, err
    summary = json.loads(out)
    assert summary["errors"] == []

    found = outcomes(ray_run)
    assert len(found) == 20 and all(o[1] == "complete" for o in found.values())
    headers = [json.loads(p.read_text()) for p in sorted((ray_run / "episodes").glob("*/episode.json"))]
    retried = [h for h in headers if h["extra"]["ray"]["retries"]]
    assert len(retried) == 1 and "ActorDiedError" in retried[0]["extra"]["ray"]["retries"][0]["error"]
    assert len({h["extra"]["ray"]["node"] for h in headers}) == 2          # both nodes ran episodes
    # The actors are gone, and so is what they started, the killed one's too (swept on its node).
    wait_for(lambda: not actors(), 30, "the actors to end")
    # An X server ends a moment after its SIGTERM, and is reaped by whoever adopted it.
    wait_for(lambda: displays() == before, 15, "the displays the run started to end")

    pool = subprocess.run([str(BIN / "clinigym"), "run", *RUN, "--workers", "2", "--out", str(pool_run)],
                          capture_output=True, text=True, timeout=900)
    assert pool.returncode == 0, pool.stderr
    assert outcomes(pool_run) == found


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_ray_run_leaves_nothing(cluster, tmp_path, sig):
    before = displays()
    driver = start_driver(cluster, tmp_path / "ray")
    try:
        wait_for_episodes(driver, tmp_path / "ray", 1)
        driver.send_signal(sig)
        _, err = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.communicate()
    assert driver.returncode == 128 + sig, err
    assert "clinigym run --resume" in err
    wait_for(lambda: not actors(), 30, "the actors to end")
    # An X server ends a moment after its SIGTERM, and is reaped by whoever adopted it.
    wait_for(lambda: displays() == before, 15, "the displays the run started to end")
    assert not list(Path("/tmp").glob("clinigym-ray-*"))     # the actors' work folders
