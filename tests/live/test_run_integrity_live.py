"""Numbers a lab can publish, tried with the real command on live Orthanc Explorer: a run
against a dead address or an unknown model stops before its first episode; a model server
killed mid-run stops the run, its episodes infrastructure errors and never no_prediction;
`clinigym run --like` of a finished oracle run gives the same summary, and `clinigym
compare` finds the two comparable."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clinigym.testing.openai_server import TestServer

SCENARIO = "orthanc/open-patient-study"    # the OCR-grounded test server completes it (test_http_live.py)


def clinigym(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clinigym.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def statuses(out: Path) -> dict[str, str | None]:
    found = {}
    for f in sorted((out / "episodes").glob("0*")):
        if not (f / "episode.json").exists():    # the folder is made before its header is written
            continue
        outcome = json.loads((f / "episode.json").read_text()).get("outcome")
        found[f.name[:4]] = outcome and outcome["status"]
    return found


@pytest.mark.live
def test_a_dead_address_stops_before_the_first_episode(tmp_path):
    url, out = f"http://127.0.0.1:{closed_port()}/v1", tmp_path / "run"
    done = clinigym("run", "--agent", "http", "--base-url", url, "--model", "tars", "--scenario", SCENARIO,
                    "--out", str(out), "--no-progress")
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith(f"error: the model server at {url} (model tars) is unavailable: no answer to "
                                  f"GET /models: ConnectionError")
    assert done.stderr.endswith("; no episode was run\n") and not out.exists()


@pytest.mark.live
def test_an_unknown_model_stops_before_the_first_episode(tmp_path):
    out = tmp_path / "run"
    with TestServer("ui-tars-1.5", models=("ui-tars",)) as server:
        done = clinigym("run", "--agent", "cua", "--mode", "goal", "--base-url", server.url, "--model", "qwen",
                        "--scenario", SCENARIO, "--out", str(out), "--no-progress")
        assert server.requests == []
    assert done.returncode == 3, done.stderr
    assert done.stderr == (f"error: the model server at {server.url} does not serve the model 'qwen' (it serves: "
                           f"ui-tars); give one of them with --model; no episode was run\n")
    assert not out.exists()


@pytest.mark.live
def test_a_server_killed_mid_run_stops_it_as_infrastructure_errors(tmp_path):
    out = tmp_path / "run"
    server = subprocess.Popen([sys.executable, "-m", "clinigym.testing.openai_server", "--family", "ui-tars-1.5"],
                              stdout=subprocess.PIPE, text=True)
    run = None
    try:
        url = server.stdout.readline().split(" on ")[1].strip()          # "serving FAMILY on URL"
        run = subprocess.Popen([sys.executable, "-m", "clinigym.cli", "run", "--agent", "http", "--model-family",
                                "ui-tars-1.5", "--base-url", url, "--scenario", SCENARIO, "--episodes", "5",
                                "--out", str(out), "--no-progress", "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: statuses(out).get("0001") if (out / "episodes").is_dir() else None, 300,
                 "the first episode's outcome")
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)
        stdout, stderr = run.communicate(timeout=300)
    finally:
        for p in (server, run):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(timeout=30)
    assert run.returncode == 3, stderr
    stopped = f"the model server at {url} (model default) stopped answering: 3 episodes in a row ended by a " \
              f"request it did not answer"
    assert f"error: the run stopped: {stopped}; continue with: clinigym run --resume {out}" in stderr
    summary = json.loads(stdout)
    assert (summary["stopped"], summary["infrastructure_errors"], summary["n_tasks"], summary["tca"]) == \
        (stopped, 4, 1, 1.0)
    assert statuses(out) == {"0001": "complete", "0002": "error", "0003": "error", "0004": "error"}
    ledger = [json.loads(line) for line in (out / "errors.jsonl").read_text().splitlines()]
    assert [(e["number"], e["cause"]) for e in ledger] == [(2, "model server unavailable"),
                                                           (3, "model server unavailable"),
                                                           (4, "model server unavailable"), (5, "model server down")]
    failures = [json.loads(line).get("failure") for f in (out / "episodes").glob("*/steps.jsonl")
                for line in f.read_text().splitlines()]
    assert failures and "no_prediction" not in failures


@pytest.mark.live
def test_like_repeats_a_run_and_compare_finds_them_comparable(tmp_path):
    first, again = tmp_path / "first", tmp_path / "again"
    done = clinigym("run", "--agent", "oracle", "--scenario", SCENARIO, "orthanc/protect-patient", "--seed", "3",
                    "--out", str(first), "--no-progress")
    assert done.returncode == 0, done.stderr
    done = clinigym("run", "--like", str(first), "--out", str(again), "--no-progress")
    assert done.returncode == 0, done.stderr
    a, b = (json.loads((d / "summary.json").read_text()) for d in (first, again))
    prov_a, prov_b = a.pop("provenance"), b.pop("provenance")
    assert a == b and a["n_tasks"] == 2 and a["tca"] == 1.0 and a["seed"] == 3
    assert prov_a["scenarios"] == prov_b["scenarios"] and prov_a["seeds"] == prov_b["seeds"]
    assert json.loads((again / "run.json").read_text())["scenarios"] == \
        json.loads((first / "run.json").read_text())["scenarios"]
    done = clinigym("compare", str(first), str(again))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("comparable: the same tasks, scenario files and program versions\n")
