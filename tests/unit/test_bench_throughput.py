"""The throughput bench's summary: medians over rounds, ratios within a round."""
import pytest

from clinigym.bench.throughput import format_throughput, summarize


def _run(round_, kind, n, seconds, outcomes=None, correct=True):
    return {"round": round_, "kind": kind, "environments": n, "seconds": seconds, "episodes": 16, "steps": 42,
            "episodes_per_min": 60 * 16 / seconds, "steps_per_min": 60 * 42 / seconds,
            "mb_per_environment": 300.0 + n, "all_correct": correct, "outcomes": outcomes or {"a#0": [True]}}


RUNS = [_run(0, "pool", 1, 80.0), _run(0, "pool", 4, 32.0), _run(0, "ray", 4, 40.0),
        _run(1, "pool", 1, 60.0), _run(1, "pool", 4, 20.0), _run(1, "ray", 4, 20.0),
        _run(2, "pool", 1, 72.0), _run(2, "pool", 4, 24.0), _run(2, "ray", 4, 30.0, outcomes={"a#0": [False]})]


def test_ratios_are_within_a_round_and_summarised_by_median():
    result = summarize(RUNS)
    one, four = result["pool"]
    assert one["ratio"] == {"median": 1.0, "min": 1.0, "max": 1.0}
    # 80/32 = 2.5, 60/20 = 3.0, 72/24 = 3.0: a median of the rounds' own ratios, not of pooled times
    assert four["ratio"] == {"median": 3.0, "min": 2.5, "max": 3.0}
    assert four["seconds"] == 24.0 and four["rounds"] == 3 and four["mb_per_environment"] == 304.0
    ray = result["ray"]
    assert ray["ratio_to_pool"] == {"median": 0.8, "min": 0.8, "max": 1.0}
    assert ray["ratio"]["median"] == pytest.approx(2.4)
    assert ray["same_outcomes_as_pool"] is False     # round 2 differs
    assert result["runs"] == RUNS


def test_a_wrong_step_in_any_round_shows():
    result = summarize([*RUNS[:3], _run(1, "pool", 1, 60.0), _run(1, "pool", 4, 20.0, correct=False)])
    assert [r["all_correct"] for r in result["pool"]] == [True, False]


def test_table():
    text = format_throughput({"mix": ["dicomscope/*"], "per_program": 4, "episodes": 2, **summarize(RUNS)})
    lines = text.splitlines()
    assert lines[2].split()[:7] == ["4", "workers", "16", "42", "24.0", "40.0", "105.0"]
    assert "3.00x (2.50-3.00)" in lines[2] and lines[2].split()[-1] == "yes"
    assert lines[4] == "ray / pool with 4: 0.80x (0.80-1.00); same outcomes: NO"
    assert "3 round(s)" in lines[5]
