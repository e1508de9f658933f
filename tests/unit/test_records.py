"""The typed recording schema: round trips, unknown fields kept, and a recording made
before the records were typed (format 1, `tests/fixtures/recording-format-1`, recorded live
with the code of c1474ec) read and scored exactly as it was then."""
from __future__ import annotations

import json
import shutil

import pytest

from clinigym.core.errors import DataError
from clinigym.core.recording_schema import FORMAT, EpisodeHeader, EpisodeOutcome, StepRecord
from clinigym.eval.export import to_medspot
from clinigym.eval.scoring import score_dirs
from clinigym.recording import episode_folders, read_episode
from conftest import REPO

LEGACY = REPO / "tests" / "fixtures" / "recording-format-1"


def test_legacy_recording_scores_exactly_as_before():
    summary, results = score_dirs([LEGACY / "episodes"])
    expected = json.loads((LEGACY / "expected-summary.json").read_text())
    # Equal up to the last bit of a float: numpy releases sum in different orders
    # (2.4.6 gives wps_norm ...2222 where the fixture's numpy gave ...22217).
    assert json.loads(json.dumps(summary, sort_keys=True)) == _approx(expected)
    # what the fixture covers: complete, failed, invalid, recovered, crashed, static, single-step
    assert summary["n_tasks"] == 12 and summary["live_outcomes"] == {"app_crashed": 1}
    assert summary["failures"] == {"no_prediction": 1, "small_target": 2, "edge_bias": 3}
    assert summary["tca_recovery"] == 1.0 and "single_step_accuracy" in summary


def _approx(value):
    if isinstance(value, dict):
        return {k: _approx(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_approx(v) for v in value]
    if isinstance(value, float):
        return pytest.approx(value, rel=1e-12, abs=1e-15)
    return value


def test_legacy_recording_exports_exactly_as_before(tmp_path):
    to_medspot([LEGACY / "episodes"], tmp_path, complete_only=False)
    for expected in LEGACY.glob("expected-export-*_Annotation.json"):
        written = tmp_path / expected.name.removeprefix("expected-export-")
        assert json.loads(written.read_text()) == json.loads(expected.read_text())


def test_legacy_files_read_as_typed_records():
    episodes = [read_episode(f) for f in episode_folders(LEGACY / "episodes")]
    assert len(episodes) == 12
    for ep in episodes:
        assert ep.header.format == 1 and isinstance(ep.header.outcome, EpisodeOutcome)
        assert all(isinstance(s, StepRecord) and s.before.endswith("-before.png") for s in ep.steps)
    crashed = next(ep for ep in episodes if ep.status == "truncated")
    assert "exited" in crashed.steps[-1].truncated_reason and crashed.steps[-1].failure == "app_crashed"


def test_round_trip_keeps_unknown_fields():
    data = {"step": 1, "instruction": "Click OK.", "expected_action": "click", "raw_action": "click(1, 2)",
            "action": {"type": "click", "point": [1.0, 2.0]}, "hit": True, "correct": True,
            "target_box": [0.0, 0.0, 4.0, 4.0], "t": 3, "before": "step-003-before.png", "from_the_future": 7}
    rec = StepRecord.from_json(data)
    assert rec.extra == {"from_the_future": 7} and rec.target_box == [0.0, 0.0, 4.0, 4.0]
    again = rec.to_json()
    assert again["from_the_future"] == 7 and StepRecord.from_json(again) == rec
    header = EpisodeHeader(scenario="orthanc/x", app="orthanc", overview="o", n_steps=1,
                           coordinates={"observation_size": [4, 4]}, outcome=EpisodeOutcome("complete", 1, 1))
    assert EpisodeHeader.from_json(json.loads(json.dumps(header.to_json()))) == header
    assert header.to_json()["format"] == FORMAT


def test_unreadable_records_are_clear_errors(tmp_path):
    with pytest.raises(DataError, match="missing instruction"):
        StepRecord.from_json({"step": 0, "expected_action": None, "raw_action": None, "action": None}, "x")
    folder = tmp_path / "ep"
    shutil.copytree(next(iter(episode_folders(LEGACY / "episodes"))), folder)
    header = json.loads((folder / "episode.json").read_text())
    (folder / "episode.json").write_text(json.dumps({**header, "format": FORMAT + 1}))
    with pytest.raises(DataError, match="newer than this clinigym reads"):
        read_episode(folder)
    (folder / "episode.json").write_text(json.dumps(header))
    lines = (folder / "steps.jsonl").read_text().splitlines()
    (folder / "steps.jsonl").write_text("\n".join(["{broken", *lines]) + "\n")
    with pytest.raises(DataError, match="line 1 is not JSON"):
        read_episode(folder)
    # a last line cut short by a kill is dropped: every finished step before it stays
    (folder / "steps.jsonl").write_text("\n".join([*lines, '{"step": 1, "instr']) + "\n")
    assert len(read_episode(folder).steps) == len(lines)


def test_a_training_row_holds_the_agent_prompt_raw_output_and_the_verdict(tmp_path):
    """What a model agent recorded (Action.meta) goes into its own columns."""
    from clinigym.core.recording_schema import EpisodeHeader, EpisodeOutcome, GoalJudgment, StepRecord
    from clinigym.eval.training_export import COLUMNS, step_rows
    from clinigym.recording import Episode
    header = EpisodeHeader(scenario="orthanc/protect-patient-lookalikes", app="orthanc", overview="Protect.",
                           n_steps=2, coordinates={"observation_size": [1280, 720]}, agent="http", seed=9,
                           instance=9, split="test", mode="goal", task="Protect patient X.", backend="docker",
                           outcome=EpisodeOutcome("complete", judgment=GoalJudgment(
                               "done", [{"check": "c", "passed": True}], True, violations=[])))
    rec = StepRecord(step=0, instruction="Protect patient X.", expected_action="click",
                     raw_action={"type": "click", "x": 3, "y": 4}, action={"type": "click", "point": [3, 4]},
                     hit=True, action_type_ok=True, target_box=[0, 0, 10, 10], timings={"act": 0.5},
                     agent={"prompt": [{"role": "user", "content": "Protect"}], "raw": "click(3, 4)", "latency": 1.5},
                     reached=1, before="step-000-before.png")
    [row] = step_rows(Episode(tmp_path / "0001-x", header, [rec]))
    assert set(row) == set(COLUMNS)
    assert (row["prompt"], row["raw_output"], row["agent_meta"]) == (
        '[{"role": "user", "content": "Protect"}]', "click(3, 4)", '{"latency": 1.5}')
    assert (row["split"], row["instance"], row["seed"], row["goal"], row["reached"]) == (
        "test", 9, 9, "Protect patient X.", 1)
    assert (row["is_success"], row["success"], row["strict_success"], row["checks"]) == (
        True, True, True, '[{"check": "c", "passed": true}]')
    assert (row["image"], row["width"], row["height"], row["point"]) == (
        "images/0001-x/step-000-before.png", 1280, 720, [3, 4])
