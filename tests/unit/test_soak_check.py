"""The soak's verdict on a run folder (clinigym.bench.soak_check) and its reading of a run in
progress (soak.Episodes): real recordings written by the recorder, exact counts."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clinigym.bench.soak import Episodes
from clinigym.bench.soak_check import check_run, memory_trend
from clinigym.core.recording_schema import EpisodeHeader, EpisodeOutcome, StepRecord
from clinigym.recording.writer import new_episode, numbered
from clinigym.run.resume import INFRASTRUCTURE, EpisodeError, append_error, note_retries

SCREEN = np.zeros((4, 6, 3), np.uint8)


@dataclass
class Fault:
    kind: str
    running: int | None
    next: int | None = None


def episode(out: Path, number: int, steps: int, outcome: EpisodeOutcome | None, pid: int = 11,
            correct: bool = True, truncated: str | None = None, retries: int = 0):
    with numbered(number):
        rec = new_episode(out / "episodes", f"dicomscope-s{number}",
                          EpisodeHeader(scenario=f"dicomscope/s{number}", app="dicomscope", overview="",
                                        n_steps=2, coordinates={}, pid=pid))
    for i in range(steps):
        last = i == steps - 1
        rec.step(StepRecord(step=i, instruction="", expected_action="click", raw_action=None, action=None,
                            correct=correct or not last, truncated_reason=truncated if last else None),
                 SCREEN, SCREEN)
    if outcome is not None:
        rec.finish(outcome)
    if retries:
        note_retries(out / "episodes", number, [{"error": "the X display is gone", "pid": pid}] * retries)
    return rec.folder


def run_folder(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    episode(out, 1, 2, EpisodeOutcome("complete", 2, 2))                              # succeeded
    episode(out, 2, 1, EpisodeOutcome("error", 0, 1, "infrastructure: dicomscope exited with status -9",
                                      extra={"cause": "infrastructure"}), truncated="dicomscope exited with status -9")
    append_error(out, EpisodeError(2, "dicomscope/s2", 0, "dicomscope exited with status -9", pid=11,
                                   cause=INFRASTRUCTURE))                             # a fault, after its retries
    episode(out, 3, 1, EpisodeOutcome("failed", 0, 1), correct=False)                 # scored, failed, no reason
    append_error(out, EpisodeError(4, "dicomscope/s4", 0, "the worker process ended (exit code -9)", pid=12,
                                   cause=INFRASTRUCTURE))                             # killed before its recording
    episode(out, 6, 2, EpisodeOutcome("complete", 2, 2), retries=2)                   # retried twice, then fine
    append_error(out, EpisodeError(7, "dicomscope/s7", 0, "TypeError: a bug", pid=12))  # neither scored nor a fault
    (out / "summary.json").write_text("{}")
    return out


def test_the_verdict_counts_each_kind_of_ending_and_attributes_the_faults(tmp_path):
    out = run_folder(tmp_path)
    faults = [Fault("kill-program", 2), Fault("kill-worker", None, 4), Fault("stop-program", 1),
              Fault("kill-display", 6), Fault("kill-container", None, None)]
    v = check_run(out, 7, 1, faults, [], [])
    assert (v.succeeded, v.scored, v.infrastructure_errors, v.retried) == (2, 3, [2, 4], {6: 2})
    assert v.failed == {2: "infrastructure: dicomscope exited with status -9", 3: "",
                        4: "the worker process ended (exit code -9)", 7: "TypeError: a bug"}
    assert v.endings == {"error": 3, "failed": 1}
    assert v.scored_failures == [3, 7]
    assert v.missing == [5, 7]
    assert v.unexplained == [3, 7]
    assert v.metrics == {"tca": 2 / 3, "s1a": 2 / 3, "shr": 4 / 6, "wps_norm": 2 / 3}
    assert v.faults == {"kill-program": {"injected": 1, "landed": 1, "absorbed": 0, "unattributed": 0},
                        "kill-worker": {"injected": 1, "landed": 1, "absorbed": 0, "unattributed": 0},
                        "stop-program": {"injected": 1, "landed": 0, "absorbed": 1, "unattributed": 0},
                        "kill-display": {"injected": 1, "landed": 1, "absorbed": 0, "unattributed": 0},
                        "kill-container": {"injected": 1, "landed": 0, "absorbed": 0, "unattributed": 1}}
    assert (v.steps, v.lost_steps, v.unfinished_lines, v.crashes) == (6, [], 0, [])
    assert v.problems == ["2 episodes are neither scored nor an infrastructure error: [5, 7]",
                          "1 failed episodes have no reason: [3]",
                          "2 episodes failed with no fault injected: [3, 7]",
                          "2 scored episodes did not succeed: [3, 7]",
                          "the oracle's metrics over the scored episodes are not 100%: TCA 66.7%, S1A 66.7%, "
                          "SHR 66.7%, WPS_NORM 66.7%"]
    assert v.counts == ("scored 3 (oracle: TCA 66.7%, S1A 66.7%, SHR 66.7%, WPS_NORM 66.7%), infrastructure "
                        "errors 2, retried 1 episodes (2 retries)")


def test_a_run_whose_faults_were_all_retried_or_errors_passes(tmp_path):
    out = tmp_path / "run"
    episode(out, 1, 2, EpisodeOutcome("complete", 2, 2), retries=1)
    episode(out, 2, 1, EpisodeOutcome("error", 0, 1, "infrastructure: the X display is gone",
                                      extra={"cause": "infrastructure"}), truncated="the X display is gone")
    append_error(out, EpisodeError(2, "dicomscope/s2", 0, "the X display is gone", pid=11, cause=INFRASTRUCTURE))
    (out / "summary.json").write_text("{}")
    v = check_run(out, 2, 1, [Fault("kill-display", 1), Fault("kill-display", 2)], [], [])
    assert (v.scored, v.succeeded, v.infrastructure_errors, v.retried, v.problems) == (1, 1, [2], {1: 1}, [])
    assert v.metrics == {"tca": 1.0, "s1a": 1.0, "shr": 1.0, "wps_norm": 1.0}


def test_lost_and_unfinished_steps_and_a_crash(tmp_path):
    out = run_folder(tmp_path)
    first = out / "episodes" / "0001-dicomscope-s1"
    (first / "step-001-after.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    with open(first / "steps.jsonl", "a") as f:
        f.write('{"step": 2, "befo')                   # a line a kill cut short: not a finished step
    (out / "summary.json").unlink()
    v = check_run(out, 6, -9, [], ["process 77 (Xvfb)"], [])
    assert v.steps == 6 and v.unfinished_lines == 1
    assert len(v.lost_steps) == 1 and v.lost_steps[0].startswith("0001-dicomscope-s1 step line 2: step-001-after.png")
    assert v.crashes == ["the run ended with status -9", "the run wrote no summary.json"]
    assert v.leftovers == ["process 77 (Xvfb)"]
    assert v.problems[0] == "runner crashed: the run ended with status -9; the run wrote no summary.json"


def test_memory_is_flat_within_the_bound_after_warm_up():
    assert memory_trend([1.0] * 9)["flat"] is None
    warm = [5000.0] * 10 + [1000.0] * 10 + [1100.0] * 80
    assert memory_trend(warm) == {"samples": 100, "start_mb": 1000.0, "end_mb": 1100.0, "growth_mb": 100.0,
                                  "flat": True}
    growing = [1000.0 + 10 * i for i in range(100)]
    trend = memory_trend(growing)
    assert (trend["start_mb"], trend["end_mb"], trend["flat"]) == (1145.0, 1945.0, False)


def test_episodes_in_progress_by_the_process_that_runs_them(tmp_path):
    out = tmp_path / "run"
    episode(out, 1, 1, EpisodeOutcome("complete", 1, 1), pid=11)
    episode(out, 2, 1, None, pid=11)                                   # running on 11
    episode(out, 3, 0, None, pid=12)
    append_error(out, EpisodeError(4, "dicomscope/s4", 0, "boom", pid=12))
    seen = Episodes(out)
    seen.refresh()
    assert (seen.running(11), seen.running(12), seen.running(13)) == (2, 3, None)
    assert seen.ended == {1, 4} and seen.pid == {1: 11, 2: 11, 3: 12, 4: 12}
    header = json.loads((out / "episodes" / "0003-dicomscope-s3" / "episode.json").read_text())
    header["outcome"] = EpisodeOutcome("abandoned", reason="the worker process ended").to_json()
    (out / "episodes" / "0003-dicomscope-s3" / "episode.json").write_text(json.dumps(header))
    seen.refresh()
    assert seen.running(12) is None and seen.ended == {1, 3, 4}


def test_the_soak_table_says_each_count_and_every_problem(tmp_path):
    from clinigym.bench.soak import SoakResult
    from clinigym.cli.soak import format_soak
    v = check_run(run_folder(tmp_path), 7, 1, [Fault("kill-program", 2)], [], [])
    text = format_soak(SoakResult(90.0, 1, [], v, [], ["OSError: boom"]))
    assert text.splitlines()[:8] == [
        "soak: 7 episodes planned in 1.5 min (run exit status 1)",
        "episodes: 2 succeeded, 4 ended early (3 error, 1 failed), 2 without an outcome, "
        "3 failed with no fault injected",
        "scored 3 (oracle: TCA 66.7%, S1A 66.7%, SHR 66.7%, WPS_NORM 66.7%), infrastructure errors 2, "
        "retried 1 episodes (2 retries)",
        "",
        "fault            injected  landed absorbed unattributed",
        "kill-program            1       1        0            0",
        "all                     1",
        ""]
    assert "steps: 6 finished, 0 lost, 0 cut off unfinished" in text
    assert "memory used (machine): too few samples" in text
    assert text.splitlines()[-6:] == [
        "FAILED: 2 episodes are neither scored nor an infrastructure error: [5, 7]",
        "FAILED: 1 failed episodes have no reason: [3]",
        "FAILED: 3 episodes failed with no fault injected: [3, 4, 7]",
        "FAILED: 2 scored episodes did not succeed: [3, 7]",
        "FAILED: the oracle's metrics over the scored episodes are not 100%: TCA 66.7%, S1A 66.7%, SHR 66.7%, "
        "WPS_NORM 66.7%",
        "FAILED: injector: OSError: boom"]
