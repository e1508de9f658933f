"""A short soak (`clinigym soak`): a pool run of the mix on both backends with one fault of
each kind injected; it must hold (no crash, every episode scored or an infrastructure error,
the oracle's metrics over the scored ones 100%, no lost step, nothing left). `make soak`
runs the long one (README)."""
from __future__ import annotations

import json

import pytest

from clinigym.bench.faults import FAULTS
from conftest import cli

pytestmark = pytest.mark.slow      # about 2-3 minutes; `make test-all`


def test_a_short_soak_holds(tmp_path):
    out = tmp_path / "soak"
    assert cli("soak", "--episodes", "36", "--faults", "10", "--seed", "3", "--out", str(out), "--no-progress") == 0
    record = json.loads((out / "soak.json").read_text())
    verdict = record["verdict"]
    injected = {kind: c["injected"] for kind, c in verdict["faults"].items()}
    # Kinds take turns; one whose target is not running then (a container) may come later or,
    # at the very end of the run, not at all.
    assert set(injected) == set(FAULTS) and sum(injected.values()) >= 8
    # every fault that landed made its episode run again (or, after its retries, an infrastructure
    # error); the scored episodes are the oracle's 100%
    assert sum(c["landed"] for c in verdict["faults"].values()) > 0
    assert len(verdict["retried"]) + len(verdict["infrastructure_errors"]) > 0
    assert verdict["missing"] == verdict["unexplained"] == verdict["lost_steps"] == verdict["leftovers"] == []
    assert verdict["scored"] + len(verdict["infrastructure_errors"]) == 36
    assert verdict["metrics"] == {"tca": 1.0, "s1a": 1.0, "shr": 1.0, "wps_norm": 1.0}
