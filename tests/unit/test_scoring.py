"""Metrics of PROTOCOL.md on hand-computed task sets."""
import pytest

from clinigym.eval.scoring import TaskResult, format_table, metrics, summarize


def tasks():
    return [
        TaskResult("a", "t1", 3, 3, None, (("small", True), ("large", True), ("large", True))),
        TaskResult("a", "t2", 3, 1, "near_miss", (("medium", True), ("medium", False))),
        TaskResult("b", "t3", 2, 0, "far_miss", (("small", False),)),
        TaskResult("b", "t4", 2, 2, None, (("large", True), ("large", True))),
    ]


def test_metrics_hand_computed():
    m = metrics(tasks())
    assert m["n_tasks"] == 4
    assert m["tca"] == pytest.approx(2 / 4)
    assert m["s1a"] == pytest.approx(3 / 4)
    assert m["shr"] == pytest.approx(6 / 10)
    # attempted: min(c+1, n) = 3, 2, 1, 2 -> 8
    assert m["shr_attempted"] == pytest.approx(6 / 8)
    # WPS: t1 1+.8+.64=2.44, t2 1, t3 0, t4 1.8 -> 5.24 / 4
    assert m["wps"] == pytest.approx(5.24 / 4)
    # WPS_norm: 1, 1/2.44, 0, 1 -> (2 + 1/2.44) / 4
    assert m["wps_norm"] == pytest.approx((2 + 1 / 2.44) / 4)
    assert m["failures"] == {"near_miss": 1, "far_miss": 1}
    assert m["live_outcomes"] == {}
    assert m["per_size"] == {"small": {"steps": 2, "accuracy": 0.5},
                             "medium": {"steps": 2, "accuracy": 0.5},
                             "large": {"steps": 4, "accuracy": 1.0}}


def test_unscorable_task_left_out_and_reported():
    m = metrics(tasks() + [TaskResult("b", "empty", 0, 0)])
    assert m["n_tasks"] == 4 and m["excluded_tasks"] == ["empty"]
    assert m["tca"] == pytest.approx(0.5)


def test_live_outcomes_apart_from_failure_types():
    m = metrics([TaskResult("a", "t", 2, 1, "no_transition"), TaskResult("a", "u", 2, 0, "edge_bias")])
    assert m["failures"] == {"edge_bias": 1}
    assert m["live_outcomes"] == {"no_transition": 1}


def test_per_app_and_table():
    s = summarize(tasks())
    assert s["per_app"]["a"]["tca"] == pytest.approx(0.5)
    assert s["per_app"]["b"]["shr"] == pytest.approx(2 / 4)
    table = format_table(s)
    assert "ALL" in table and " 50.0%" in table and "near_miss=1" in table


def test_recovery_beside_strict():
    m = metrics([TaskResult("a", "t", 2, 0, "far_miss", recovered=True),
                 TaskResult("a", "u", 2, 2, None, recovered=True)])
    assert m["tca"] == 0.5 and m["tca_recovery"] == 1.0


def test_bootstrap_intervals():
    from clinigym.eval.scoring import confidence_intervals
    done = [TaskResult("a", f"t{i}", 2, 2) for i in range(5)]
    assert confidence_intervals(done)["tca"] == [1.0, 1.0]
    # two tasks, one complete: resampled TCA is 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4
    pair = [TaskResult("a", "x", 2, 2), TaskResult("a", "y", 2, 0, "far_miss")]
    ci = confidence_intervals(pair)
    assert ci["tca"] == [0.0, 1.0] and ci["shr"] == [0.0, 1.0]
    assert confidence_intervals(tasks()) == confidence_intervals(tasks())     # seed 42
    lo, hi = confidence_intervals(tasks())["shr"]
    assert lo <= 0.6 <= hi


def test_categories_from_overview():
    from clinigym.eval.scoring import categorize
    assert categorize("Delete the selected study from the browser menu") == "data management"
    assert categorize("Anonymize study.") == "data management"
    assert categorize("Invert the color of the DICOM") == "image adjustment"
    assert categorize("Painting the DICOM using rectangle tool") == "annotation and measurement"
    assert categorize("Enable linear interpolation.") == "configuration"
    assert categorize("Set four-image layout.") == "viewing and navigation"
    assert categorize("Change the presets for the current window") == "image adjustment"
    assert categorize("Something else entirely") == "other"
    s = summarize([TaskResult("a", "t", 2, 2, category="data management"),
                   TaskResult("a", "u", 2, 0, "far_miss", category="other")])
    assert s["per_category"]["data management"]["tca"] == 1.0 and s["per_category"]["other"]["tca"] == 0.0


def test_single_step_beside_sequential():
    # Step 1 wrong, step 2 right: sequential SHR 0, single-step accuracy 1/2.
    m = metrics([TaskResult("a", "t", 2, 0, "far_miss", steps_correct=(False, True))])
    assert m["shr"] == 0.0 and m["single_step_accuracy"] == 0.5
