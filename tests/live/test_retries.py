"""Faults apart from failures, on the real programs: a pool worker, a display and a container
killed from outside mid-episode (as `clinigym soak` does, `clinigym.bench.faults`). With
retries, each episode hit runs again from its reset, its header notes the attempt, and the
summary is that of an untouched run; with none (`retries=0`), each is an infrastructure error:
status "error", in no metric, counted, and in the run's errors (the command exits 1).

The runs are made in this process (the pool's coordinator); a thread finds each worker's
parts in its process tree or container, as `clinigym soak` does, and strikes the first
episode under way that it has not struck yet."""
from __future__ import annotations

import json
import random
import threading
from pathlib import Path

import pytest

from clinigym.bench.faults import FAULTS, TargetGone, find_target
from clinigym.recording import episode_folders, read_episode
from clinigym.recording.writer import episode_number
from clinigym.run.runner import run
from clinigym.runtime.waiting import wait_for
from clinigym.spec.scenarios import load_scenario
from conftest import REPO

ORTHANC = [REPO / "scenarios" / "orthanc" / f for f in ("info-birth-date.yaml", "info-patient-id.yaml",
                                                       "info-accession-number.yaml")]
DICOMSCOPE = [REPO / "scenarios" / "dicomscope" / f for f in ("medspot-01-flip.yaml", "medspot-02-rotate.yaml")]


class Striker(threading.Thread):
    """Injects each fault of `kinds`, in turn, into the worker of an episode under way (its
    recording begun, no step finished yet) that no earlier fault struck."""

    def __init__(self, out: Path, kinds: list[str], engine=None):
        super().__init__(daemon=True)
        self.out, self.kinds, self.engine = out / "episodes", kinds, engine
        self.struck: dict[int, str] = {}      # episode number -> the fault's kind
        self.error: BaseException | None = None
        self.finish = threading.Event()

    def run(self) -> None:
        try:
            for kind in self.kinds:
                wait_for(lambda kind=kind: self.finish.is_set() or self._strike(kind), 240,
                         f"an episode under way to {kind}")
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def _strike(self, kind: str) -> bool:
        for folder in episode_folders(self.out) if self.out.is_dir() else []:
            number = episode_number(folder)
            try:
                header = json.loads((folder / "episode.json").read_text())
            except (OSError, ValueError):
                continue
            # in its first step, so that the fault lands before its last step's outcome is decided
            if header.get("outcome") or number in self.struck or _finished_steps(folder):
                continue
            target = find_target(header["pid"], self.engine)
            if target is None or not FAULTS[kind].applies(target, True):
                continue
            try:
                FAULTS[kind].inject(target, random.Random(0), 0.0)
            except TargetGone:
                continue
            self.struck[number] = kind
            return True
        return False


def _finished_steps(folder: Path) -> int:
    try:
        return (folder / "steps.jsonl").read_text().count("\n")
    except OSError:
        return 0


def faulted_run(scenarios: list[Path], out: Path, kinds: list[str], backend: str | None, workers: int,
                retries: int | None = None):
    engine = None
    if backend == "docker":
        from clinigym.runtime.images import engine as docker_engine
        engine = docker_engine()
    striker = Striker(out, kinds, engine)
    striker.start()
    try:
        result = run([load_scenario(p) for p in scenarios], "oracle", out, progress=False, backend=backend,
                     workers=workers, **({} if retries is None else {"retries": retries}))
    finally:
        striker.finish.set()
        striker.join()
    assert striker.error is None, striker.error
    assert sorted(striker.struck.values()) == sorted(kinds)
    return result, striker.struck


def untouched(scenarios: list[Path], out: Path, backend: str | None, workers: int) -> dict:
    result = run([load_scenario(p) for p in scenarios], "oracle", out, progress=False, backend=backend,
                 workers=workers)
    assert result.errors == [] and result.summary["tca"] == 1.0
    return result.summary


def headers(out: Path) -> dict[int, dict]:
    return {episode_number(f): json.loads((f / "episode.json").read_text()) for f in episode_folders(out / "episodes")}


def check_retried(out: Path, result, struck: dict[int, str], reference: dict) -> None:
    """Each episode struck ran again and says why; the summary is the untouched run's."""
    assert result.errors == []
    assert result.summary == reference
    found = headers(out)
    for number, header in found.items():
        retries = header.get("extra", {}).get("retries", [])
        assert len(retries) == (number in struck), (number, retries)
        assert header["outcome"]["status"] == "complete" and header["outcome"]["cause"] == "agent"
    assert set(found) == set(range(1, reference["n_tasks"] + 1))


def check_errors(out: Path, result, struck: dict[int, str], planned: int) -> None:
    """Each episode struck is an infrastructure error: in no metric, counted, listed."""
    summary = result.summary
    assert (summary["infrastructure_errors"], summary["n_tasks"], summary["tca"]) == \
        (len(struck), planned - len(struck), 1.0)
    assert sorted(e["cause"] for e in result.errors) == ["infrastructure"] * len(struck)   # the command exits 1
    found = headers(out)
    assert sorted(e["scenario"] for e in result.errors) == sorted(found[n]["scenario"] for n in struck)
    for number, header in found.items():
        status = header["outcome"]["status"]
        assert status == ("error" if number in struck else "complete"), (number, header["outcome"])
        assert "retries" not in header.get("extra", {})
    for folder in episode_folders(out / "episodes"):
        assert read_episode(folder).status in ("error", "complete")


@pytest.fixture(scope="module")
def local_reference(tmp_path_factory) -> dict:
    return untouched(ORTHANC, tmp_path_factory.mktemp("untouched"), None, 2)


def test_a_killed_worker_and_display_are_retried_and_change_nothing(local_reference, tmp_path):
    result, struck = faulted_run(ORTHANC, tmp_path, ["kill-worker", "kill-display"], None, 2)
    check_retried(tmp_path, result, struck, local_reference)
    retried = {n: headers(tmp_path)[n]["extra"]["retries"][0]["error"] for n in struck}
    assert {struck[n]: why.split(" (")[0] for n, why in retried.items()} == {
        "kill-worker": "the worker process ended", "kill-display": "the X display is gone"}


def test_without_retries_they_are_infrastructure_errors(tmp_path):
    result, struck = faulted_run(ORTHANC, tmp_path, ["kill-worker", "kill-display"], None, 2, retries=0)
    check_errors(tmp_path, result, struck, len(ORTHANC))


@pytest.mark.docker
def test_a_killed_container_is_retried_and_without_retries_is_an_error(tmp_path):
    reference = untouched(ORTHANC[:2], tmp_path / "untouched", "docker", 1)
    result, struck = faulted_run(ORTHANC[:2], tmp_path / "retried", ["kill-container"], "docker", 1)
    check_retried(tmp_path / "retried", result, struck, reference)
    result, struck = faulted_run(ORTHANC[:2], tmp_path / "none", ["kill-container"], "docker", 1, retries=0)
    check_errors(tmp_path / "none", result, struck, 2)


@pytest.mark.slow
def test_dicomscope_killed_every_way_on_a_pool(tmp_path):
    """The longer variant: DICOMscope's JVM and Orthanc, two workers and a display killed.
    (A program group killed may be a helper the program lives without, as Chromium's crash
    handler: `clinigym soak` counts such a fault absorbed.)"""
    mix = DICOMSCOPE + ORTHANC
    reference = untouched(mix, tmp_path / "untouched", None, 2)
    kinds = ["kill-worker", "kill-display", "kill-worker"]
    result, struck = faulted_run(mix, tmp_path / "retried", kinds, None, 2)
    check_retried(tmp_path / "retried", result, struck, reference)
