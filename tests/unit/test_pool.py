"""A run's bookkeeping, with exact values: episodes planned and numbered up front, shared out
among workers, episode folders numbered safely by concurrent writers, resume (which
episodes are done, what a kill cut off), stop signals, and what a killed run left (real
processes, real folders; no X display, no Docker)."""
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys

import pytest

from clinigym.core.errors import DataError
from clinigym.core.recording_schema import EpisodeHeader
from clinigym.recording.writer import episode_number, new_episode, numbered
from clinigym.run import resume as bookkeeping
from clinigym.run.resume import EpisodeError, Survey, pending, prepare_resume, read_errors, survey
from clinigym.run.schedule import (
    Chunk,
    RunSpec,
    ScenarioRef,
    episode_seed,
    next_chunk,
    partition,
    plan_episodes,
    split,
)
from clinigym.run.stopping import RunStopped, stop_on
from clinigym.runtime import procfs, slots
from clinigym.runtime.backends import local
from clinigym.runtime.waiting import wait_for

D1 = ScenarioRef("/s/d1.yaml", "dicomscope/d1", "dicomscope")
D2 = ScenarioRef("/s/d2.yaml", "dicomscope/d2", "dicomscope")
O1, O2 = ScenarioRef("/s/o1.yaml", "orthanc/o1", "orthanc"), ScenarioRef("/s/o2.yaml", "orthanc/o2", "orthanc")


def numbers(chunks: list[Chunk]) -> list[tuple[str, list[int]]]:
    return [(c.app, [p.number for p in c.episodes]) for c in chunks]


# -- the plan -----------------------------------------------------------------------------
def test_episodes_are_numbered_program_by_program_with_the_seeds_one_process_used():
    planned = plan_episodes([D1, O1, D2, O2], episodes=2, seed=0)
    assert [(p.number, p.key, p.episode) for p in planned] == [
        (1, "dicomscope/d1", 0), (2, "dicomscope/d1", 1), (3, "dicomscope/d2", 0), (4, "dicomscope/d2", 1),
        (5, "orthanc/o1", 0), (6, "orthanc/o1", 1), (7, "orthanc/o2", 0), (8, "orthanc/o2", 1)]
    assert planned[0].seed == episode_seed(0, "dicomscope/d1", 0)
    # crc32 of "seed/key/episode", as every run before the pool
    assert (episode_seed(0, "dicomscope/a", 0), episode_seed(0, "dicomscope/a", 1),
            episode_seed(7, "orthanc/b", 0)) == (1355151345, 667076455, 3328211953)


def test_split_in_consecutive_pieces():
    planned = plan_episodes([D1], episodes=10, seed=0)
    assert [len(piece) for piece in split(planned, 3)] == [4, 3, 3]
    assert [p.number for piece in split(planned, 3) for p in piece] == list(range(1, 11))


def test_partition():
    planned = plan_episodes([D1, D2, O1, O2], episodes=1, seed=0)
    assert numbers(partition(planned, 1)) == [("dicomscope", [1, 2]), ("orthanc", [3, 4])]
    assert numbers(partition(planned, 2)) == [("dicomscope", [1]), ("dicomscope", [2]),
                                              ("orthanc", [3]), ("orthanc", [4])]
    # 201 episodes, 2 workers: pieces of at most ceil(201 / (2 x 32)) = 4 consecutive episodes
    chunks = partition(plan_episodes([D1, D2, O1], episodes=67, seed=0), 2)
    assert [(c.app, len(c.episodes)) for c in chunks] == (
        [("dicomscope", 4)] * 32 + [("dicomscope", 3)] * 2 + [("orthanc", 4)] * 16 + [("orthanc", 3)])
    assert [p.number for c in chunks for p in c.episodes] == list(range(1, 202))


def test_a_worker_keeps_its_program_else_takes_the_program_with_most_left_per_worker():
    planned = plan_episodes([D1, O1], episodes=5, seed=0)
    remaining = partition(planned, 3)      # ten chunks of one episode: dicomscope 1-5, orthanc 6-10
    assert next_chunk(remaining, None) == 0                          # a tie: the first program
    assert next_chunk(remaining, None, {"dicomscope": 1}) == 5       # 5/2 left per worker against 5/1
    assert next_chunk(remaining, "dicomscope", {"dicomscope": 3}) == 0
    assert next_chunk(remaining, "orthanc") == 5
    assert next_chunk(remaining, "aeskulap", {"dicomscope": 2, "orthanc": 1}) == 5
    assert next_chunk(remaining[3:], "aeskulap") == 2                # dicomscope has 2 left, orthanc 5


def test_run_spec_round_trips_and_says_what_the_summary_said():
    spec = RunSpec(("/s/d1.yaml",), "http", {"model": "m", "timeout": 30.0}, 3, 7, "goal", False, 12, "docker",
                   ("/lab",))
    assert RunSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
    assert spec.summary_fields() == {"agent": "http", "episodes": 3, "seed": 7, "mode": "goal",
                                     "observation": "screenshot", "budget": 12, "audit": "per_step"}
    # a run.json from before the per-step audit keeps its rule (the end) on --resume
    old = {k: v for k, v in spec.to_json().items() if k != "audit"}
    assert RunSpec.from_json(old).audit == "end"
    assert RunSpec(("/s/d1.yaml",), "oracle").summary_fields() == {
        "agent": "oracle", "episodes": 1, "seed": 0, "mode": "steps", "observation": "screenshot",
        "recovery": False}


# -- episode folders ----------------------------------------------------------------------
def header(key: str = "dicomscope/d1") -> EpisodeHeader:
    return EpisodeHeader(scenario=key, app=key.split("/")[0], overview="", n_steps=1, coordinates={})


def test_numbered_episodes_and_the_next_number(tmp_path):
    with numbered(7):
        a = new_episode(tmp_path, "dicomscope-d1", header())
    b = new_episode(tmp_path, "orthanc-o1", header("orthanc/o1"))
    assert (a.folder.name, b.folder.name) == ("0007-dicomscope-d1", "0008-orthanc-o1")
    assert (episode_number(a.folder), episode_number("notes"), episode_number("12345-x")) == (7, None, 12345)
    with numbered(7), pytest.raises(DataError, match="episode number 7 is 0007-dicomscope-d1 already"):
        new_episode(tmp_path, "orthanc-o2", header("orthanc/o2"))


def _record_many(folder: str, start, n: int) -> None:
    start.wait()
    for _ in range(n):
        new_episode(folder, f"p{os.getpid()}", header()).finish(None)


def test_concurrent_writers_never_share_a_number(tmp_path):
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    writers = [context.Process(target=_record_many, args=(str(tmp_path), start, 15)) for _ in range(3)]
    for w in writers:
        w.start()
    start.set()
    for w in writers:
        w.join(60)
    assert [w.exitcode for w in writers] == [0, 0, 0]
    assert sorted(episode_number(p) for p in tmp_path.iterdir()) == list(range(1, 46))


# -- resume -------------------------------------------------------------------------------
def folder(run, number: int, key: str, outcome: str | None):
    f = run / "episodes" / f"{number:04d}-{key.replace('/', '-')}"
    f.mkdir(parents=True)
    data = header(key).to_json() | ({"outcome": {"status": outcome}} if outcome else {})
    (f / "episode.json").write_text(json.dumps(data))
    return f


def test_which_episodes_are_done(tmp_path):
    planned = plan_episodes([D1, D2, O1], episodes=2, seed=0)            # 1..6
    folder(tmp_path, 1, "dicomscope/d1", "complete")
    folder(tmp_path, 2, "dicomscope/d1", "abandoned")                    # ended: an error midway
    cut = folder(tmp_path, 3, "dicomscope/d2", None)                     # cut off by the kill
    (tmp_path / "episodes" / "0004-dicomscope-d2").mkdir()               # killed before its header
    (tmp_path / "episodes" / "summary-notes").mkdir()
    found = survey(tmp_path / "episodes")
    assert found == Survey(frozenset({1, 2}), (cut, tmp_path / "episodes" / "0004-dicomscope-d2"))
    errors = [EpisodeError(2, "dicomscope/d1", 1, "TargetNotFound"),   # stands: its episode ended
              EpisodeError(3, "dicomscope/d2", 0, "an error, then the kill"),
              EpisodeError(5, "orthanc/o1", 0, "reset failed twice")]  # nothing recorded: done
    todo, kept = pending(planned, found, errors)
    assert [p.number for p in todo] == [3, 4, 6]
    assert [e.number for e in kept] == [2, 5]


def test_prepare_resume_removes_what_was_cut_off(tmp_path):
    planned = plan_episodes([D1, O1], episodes=2, seed=0)                # 1..4
    folder(tmp_path, 1, "dicomscope/d1", "complete")
    cut = folder(tmp_path, 2, "dicomscope/d1", None)
    bookkeeping.append_error(tmp_path, EpisodeError(2, "dicomscope/d1", 1, "before the kill"))
    bookkeeping.append_error(tmp_path, EpisodeError(3, "orthanc/o1", 0, "no program"))
    with open(tmp_path / "errors.jsonl", "a") as f:
        f.write('{"number": 4, "scen')                                     # a line cut short by a kill
    assert [e.number for e in read_errors(tmp_path)] == [2, 3]
    todo = prepare_resume(tmp_path, planned)
    assert [p.number for p in todo] == [2, 4] and not cut.exists()
    assert read_errors(tmp_path) == [EpisodeError(3, "orthanc/o1", 0, "no program")]
    assert read_errors(tmp_path)[0].summary() == {"scenario": "orthanc/o1", "episode": 0, "error": "no program",
                                                  "traceback": ""}


def test_an_attempt_is_discarded_noted_and_the_last_marked_an_infrastructure_error(tmp_path):
    episodes = tmp_path / "episodes"
    cut = folder(tmp_path, 3, "orthanc/o1", None)                        # its worker died under it
    truncated = folder(tmp_path, 4, "orthanc/o2", None)
    data = json.loads((truncated / "episode.json").read_text())
    data["outcome"] = {"status": "truncated", "reason": "the X display is gone (Xvfb exited)",
                       "cause": "infrastructure"}
    (truncated / "episode.json").write_text(json.dumps(data))
    assert bookkeeping.ended_cause(episodes, 4) == ("infrastructure", "the X display is gone (Xvfb exited)")
    assert bookkeeping.ended_cause(episodes, 3) == (None, None)
    assert bookkeeping.ended_cause(episodes, 5) == (None, None)          # no folder
    bookkeeping.discard(episodes, 4)
    assert not truncated.exists()
    bookkeeping.end_as_error(episodes, 3, "infrastructure: the worker process ended (exit code -9)")
    bookkeeping.note_retries(episodes, 3, [{"error": "the X display is gone", "pid": 12}])
    bookkeeping.end_as_error(episodes, 5, "no folder: nothing to do")
    saved = json.loads((cut / "episode.json").read_text())
    assert saved["outcome"] == {"status": "error", "steps_correct": 0, "actions": 0, "judgment": None,
                                "reason": "infrastructure: the worker process ended (exit code -9)",
                                "cause": "infrastructure"}
    assert saved["extra"] == {"retries": [{"error": "the X display is gone", "pid": 12}]}
    assert survey(episodes) == Survey(frozenset(), (cut,))               # a resume runs it again


def test_resume_needs_the_run_file_and_a_folder_no_run_holds(tmp_path):
    with pytest.raises(DataError, match="no run.json"):
        bookkeeping.read_spec(tmp_path)
    spec = RunSpec(("/s/d1.yaml",), "oracle")
    bookkeeping.write_spec(tmp_path, spec)
    assert bookkeeping.read_spec(tmp_path) == spec
    with bookkeeping.holding(tmp_path):
        code = ("from pathlib import Path\nfrom clinigym.run.resume import holding\n"
                f"with holding(Path({str(tmp_path)!r})): pass")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert "another run is writing to this folder" in done.stderr
    with bookkeeping.holding(tmp_path):      # free again
        pass


# -- stopping -----------------------------------------------------------------------------
def test_the_first_signal_stops_later_ones_are_remembered():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(RunStopped) as stopped, stop_on(signal.SIGTERM):
        os.kill(os.getpid(), signal.SIGTERM)
        pytest.fail("the handler raises at once")
    assert stopped.value.signum == signal.SIGTERM and isinstance(stopped.value, KeyboardInterrupt)
    with stop_on(signal.SIGTERM) as guard:
        guard.shield()                             # closing: not cut short
        os.kill(os.getpid(), signal.SIGTERM)
        assert guard.signum == signal.SIGTERM
        with pytest.raises(RunStopped):
            guard.check()
    assert signal.getsignal(signal.SIGTERM) is before


# -- what a killed run left ---------------------------------------------------------------
def gone_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def group_of(leader: int) -> list[int]:
    return [int(p) for p in subprocess.run(["pgrep", "-g", str(leader)], capture_output=True,
                                           text=True).stdout.split()]


def test_processes_a_gone_owner_marked_are_ended_with_their_sessions(tmp_path, monkeypatch):
    monkeypatch.setattr(local, "ROOT", tmp_path)
    dead = gone_pid()
    env = dict(os.environ, **{slots.OWNER_ENV: str(dead)})
    # a program's session: a leader with the mark, and a child without (as Chromium's children,
    # which write over their environment)
    leader = subprocess.Popen(["sh", "-c", "env -i sleep 60 & exec sleep 61"], env=env, start_new_session=True)
    other = subprocess.Popen(["sleep", "62"], env=dict(os.environ, **{slots.OWNER_ENV: str(os.getpid())}))
    try:
        wait_for(lambda: len(group_of(leader.pid)) == 2 and local._owner_of(leader.pid) == dead, 10,
                 "the session's two processes")
        group = group_of(leader.pid)
        assert [local._owner_of(p) for p in sorted(group)] in ([dead, None], [None, dead])
        removed = local.kill_owned({dead})
        assert sorted(removed) == sorted(f"process {p} (sleep)" for p in group)
        # ended (an orphan may stay a zombie until PID 1 reaps it); the other owner's process runs
        assert [p for p in group if (st := procfs.stat(p)) and st.state != "Z"] == [] and other.poll() is None
        assert local.kill_owned({dead}) == []
    finally:
        for p in (leader, other):
            p.kill()
            p.wait()


def test_work_folders_of_owners_that_are_gone(tmp_path, monkeypatch):
    monkeypatch.setattr(slots, "ROOT", tmp_path)
    dead = gone_pid()
    for name, owner in (("clinigym-viewer-0", dead), ("clinigym-viewer-1", os.getpid()),
                        ("clinigym-other-3", None)):
        (tmp_path / name).mkdir()
        if owner:
            (tmp_path / name / "owner").write_text(str(owner))
    (tmp_path / "clinigym-display-12345678").mkdir()     # a display's folder: not a work folder
    assert slots.remove_workdirs({os.getpid()}) == [str(tmp_path / "clinigym-viewer-1")]
    assert slots.remove_workdirs() == [str(tmp_path / "clinigym-other-3"), str(tmp_path / "clinigym-viewer-0")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clinigym-display-12345678", "clinigym-slots.lock"]
