"""Runs with a pool of workers on the real programs: the same outcomes as one process; a
stopped run (SIGTERM, SIGINT) leaves nothing behind, within the bound; what a killed run
(SIGKILL) left is removed by `clinigym cleanup`, which keeps a live run's; a killed run
resumed gives the summary of one that was never interrupted; a killed worker's episode runs
again and the summary is the same. What a run started is told
by its process tree (`footprint`)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from footprint import BOUND, start, statuses, wait_mid_episode

from clinigym.bench.footprint import Footprint
from clinigym.recording import episode_folders, read_episode
from clinigym.run.cleanup import sweep
from clinigym.run.runner import run
from clinigym.runtime.backends import make_backend
from clinigym.runtime.procfs import comm, tree
from clinigym.runtime.waiting import wait_for
from clinigym.spec.apps import load_app
from clinigym.spec.scenarios import load_scenario
from conftest import REPO

# Two DICOMscope and two Orthanc Explorer scenarios: two programs, two steps each.
MIX = [REPO / "scenarios" / f for f in ("dicomscope/medspot-01-flip.yaml", "dicomscope/medspot-02-rotate.yaml",
                                          "orthanc/info-birth-date.yaml", "orthanc/info-patient-id.yaml")]


def outcomes(out: Path) -> list[tuple]:
    """Per episode: folder, scenario, seed, status and each step's judged outcome."""
    rows = []
    for folder in episode_folders(out / "episodes"):
        ep = read_episode(folder)
        rows.append((folder.name, ep.header.scenario, ep.header.seed, ep.status,
                     [(s.step, s.correct, s.failure, s.transition_seen, s.final_check) for s in ep.steps]))
    return rows


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The mix run by one process, uninterrupted."""
    out = tmp_path_factory.mktemp("one-worker")
    result = run([load_scenario(p) for p in MIX], "oracle", out, progress=False)
    assert result.errors == [] and result.summary["tca"] == 1.0
    return out


def test_two_workers_give_the_outcomes_of_one(reference, tmp_path):
    result = run([load_scenario(p) for p in MIX], "oracle", tmp_path, progress=False, workers=2)
    assert result.errors == []
    assert outcomes(tmp_path) == outcomes(reference)
    assert [row[0] for row in outcomes(tmp_path)] == ["0001-dicomscope-medspot-01-flip",
                                                     "0002-dicomscope-medspot-02-rotate",
                                                     "0003-orthanc-info-birth-date", "0004-orthanc-info-patient-id"]
    assert json.loads((tmp_path / "summary.json").read_text()) == json.loads((reference / "summary.json").read_text())


@pytest.mark.parametrize("sig,group,workers", [(signal.SIGTERM, False, 2), (signal.SIGINT, True, 2),
                                               (signal.SIGTERM, False, 1)],
                         ids=["SIGTERM", "SIGINT-to-the-group", "SIGTERM-one-process"])
def test_a_stopped_run_leaves_nothing(tmp_path, sig, group, workers):
    proc = start(MIX, "--out", str(tmp_path), "--workers", str(workers))
    footprint = Footprint(proc.pid)
    try:
        wait_mid_episode(proc, tmp_path, footprint, displays=workers)
        assert {"Xvfb", "openbox", "java"} <= footprint.names()
        t = time.monotonic()
        # SIGINT as a terminal sends it (to the whole group: the workers leave it to the coordinator)
        os.killpg(proc.pid, sig) if group else os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=BOUND + 10)
        took = time.monotonic() - t
        assert proc.returncode == 128 + sig, err
        assert took < BOUND and "clinigym run --resume" in err
        assert footprint.gone_within(BOUND - took) == []
        assert None in statuses(tmp_path)      # the episode cut off has no outcome: a resume runs it again
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        sweep(set(footprint.procs))


def test_workers_close_their_programs_when_the_coordinator_is_killed(tmp_path):
    proc = start(MIX, "--out", str(tmp_path), "--workers", "2")
    footprint = Footprint(proc.pid)
    try:
        wait_mid_episode(proc, tmp_path, footprint)
        os.kill(proc.pid, signal.SIGKILL)          # the coordinator only: the kernel tells its workers
        proc.communicate()
        assert footprint.gone_within(BOUND) == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        sweep(set(footprint.procs))


def test_cleanup_after_sigkill_keeps_live_runs_and_resume_completes_the_run(reference, tmp_path):
    proc = start(MIX, "--out", str(tmp_path), "--workers", "2")
    footprint = Footprint(proc.pid)
    live = None
    try:
        wait_mid_episode(proc, tmp_path, footprint, finished=1)
        os.killpg(proc.pid, signal.SIGKILL)        # the coordinator and its workers; their programs stay
        proc.wait()
        footprint.record()
        # Left running by the killed run: the displays and the program of the episode under way
        # (DICOMscope's JVM or Orthanc, by when the kill comes).
        left = footprint.names()
        assert {"Xvfb", "openbox"} <= left and left & {"java", "Orthanc"}
        live = make_backend(load_app("dicomscope"))               # a live run's program
        live.reset()
        done = subprocess.run([sys.executable, "-m", "clinigym.cli", "cleanup", "--json"], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        # The killed run's guardians sweep too, at the same time, and end when they are done.
        assert footprint.gone_within(BOUND) == []
        assert live.dead() is None and live.workdir.exists() and live.display.alive()
        assert not any(str(live.workdir) == r for r in json.loads(done.stdout))

        resumed = subprocess.run([sys.executable, "-m", "clinigym.cli", "run", "--resume", str(tmp_path),
                                  "--workers", "2", "--no-progress", "--json"], capture_output=True, text=True,
                                 timeout=600)
        assert resumed.returncode == 0, resumed.stderr
        assert outcomes(tmp_path) == outcomes(reference)
        assert json.loads(resumed.stdout) == json.loads((reference / "summary.json").read_text())
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        sweep(set(footprint.procs))
        if live is not None:
            live.close()


def _workers(coordinator: int) -> dict[int, set[str]]:
    """The pool's workers (children of the coordinator that run `spawn_main`), each with the
    names of the processes under it."""
    found = {}
    for pid in tree(coordinator):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if pid != coordinator and b"spawn_main" in cmdline:
            found[pid] = {comm(p) for p in tree(pid)}
    return found


def test_a_worker_that_dies_costs_no_episode(reference, tmp_path):
    proc = start(MIX, "--out", str(tmp_path), "--workers", "2", "--json")
    footprint = Footprint(proc.pid)
    try:
        wait_mid_episode(proc, tmp_path, footprint)

        def dicomscope_under_way() -> bool:
            return any(json.loads((f / "episode.json").read_text()).get("outcome") is None
                       for f in (tmp_path / "episodes").glob("*-dicomscope-*") if (f / "episode.json").exists())
        wait_for(dicomscope_under_way, 120, "a DICOMscope episode under way")
        victim = next(pid for pid, names in _workers(proc.pid).items() if "java" in names)   # DICOMscope's
        os.kill(victim, signal.SIGKILL)
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err                      # its episode ran again, in a new worker
        assert json.loads(out) == json.loads((reference / "summary.json").read_text())
        assert outcomes(tmp_path) == outcomes(reference)
        # the episode it ran (or, killed in its reset, the next one) notes the attempt its death ended
        retried = {row[1]: json.loads((tmp_path / "episodes" / row[0] / "episode.json").read_text())
                   .get("extra", {}).get("retries") for row in outcomes(tmp_path)}
        [(scenario, tries)] = [(k, v) for k, v in retried.items() if v]
        assert scenario.startswith("dicomscope/")
        assert tries == [{"error": "the worker process ended (exit code -9) during this episode", "pid": victim}]
        assert footprint.gone_within(BOUND) == []             # the dead worker's programs too
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        sweep(set(footprint.procs))
