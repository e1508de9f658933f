"""A model server checked before a run (clinigym.agents.http.preflight, clinigym.run.runner
.preflight) against the real loopback test server and a closed port; a server that stops
answering mid-episode is an infrastructure fault, not the model's no_prediction; the
bookkeeping that keeps such episodes out of the metrics and runs them again on resume."""
from __future__ import annotations

import json
import socket

import numpy as np
import pytest

from clinigym.agents.cua.agent import CuaAgent
from clinigym.agents.http import HttpAgent, ModelNotServed, Served, ServerUnavailable, preflight, read_models
from clinigym.core.recording_schema import EpisodeHeader, EpisodeOutcome, StepRecord
from clinigym.eval.scoring import score_dirs
from clinigym.recording.writer import new_episode, numbered
from clinigym.run import runner
from clinigym.run.resume import SERVER_DOWN, SERVER_FAILED, EpisodeError, end_as_error, pending, survey
from clinigym.run.schedule import ScenarioRef, plan_episodes
from clinigym.testing.openai_server import TestServer

URL = "http://127.0.0.1:8000/v1"
OBS = {"screenshot": np.zeros((60, 80, 3), np.uint8), "instruction": "Click the Open button", "step": 0}


def closed_port() -> int:
    """A port nothing listens on: bound, then released (loopback)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the /models answer, judged -----------------------------------------------------------

def test_a_listed_model_is_served_with_its_entry():
    payload = {"object": "list", "data": [{"id": "a", "object": "model"},
                                          {"id": "ui-tars", "root": "/w/UI-TARS-1.5-7B", "max_model_len": 32768,
                                           "permission": [{"id": "p"}]}]}
    assert read_models(URL, "ui-tars", 200, payload) == Served(
        ("a", "ui-tars"), {"id": "ui-tars", "root": "/w/UI-TARS-1.5-7B", "max_model_len": 32768})


def test_a_model_not_listed_is_refused_naming_address_and_model():
    with pytest.raises(ModelNotServed) as err:
        read_models(URL, "tars", 200, {"data": [{"id": "a"}, {"id": "b"}]})
    assert str(err.value) == ("the model server at http://127.0.0.1:8000/v1 does not serve the model 'tars' "
                              "(it serves: a, b); give one of them with --model")


@pytest.mark.parametrize("status, payload, warning", [
    (404, None, "the model server at http://127.0.0.1:8000/v1 has no /models endpoint (HTTP 404): cannot check "
                "that it serves 'm'"),
    (200, {"object": "list", "data": []}, "the model server at http://127.0.0.1:8000/v1 lists no models: cannot "
                                          "check that it serves 'm'")])
def test_no_model_list_is_a_warning_not_a_stop(status, payload, warning):
    assert read_models(URL, "m", status, payload) == Served((), None, warning)


@pytest.mark.parametrize("status, payload, problem", [
    (401, {"error": "no key"}, "GET /models: HTTP 401 (is the API key right? --api-key-env names its variable)"),
    (502, None, "GET /models: HTTP 502"),
    (200, ["m"], 'GET /models: not a model list ({"data": [{"id": ...}]})')])
def test_other_answers_are_an_unavailable_server(status, payload, problem):
    with pytest.raises(ServerUnavailable) as err:
        read_models(URL, "m", status, payload)
    assert str(err.value) == f"the model server at http://127.0.0.1:8000/v1 (model m) is unavailable: {problem}"


# --- against the real loopback server and a closed port -----------------------------------

def test_preflight_passes_against_the_test_server():
    with TestServer("ui-tars-1.5", models=("default", "tars")) as server:
        assert preflight(server.url, "tars") == Served(("default", "tars"),
                                                       {"id": "tars", "object": "model", "owned_by": "clinigym-test"})
        with pytest.raises(ModelNotServed, match=r"does not serve the model 'x' \(it serves: default, tars\)"):
            preflight(server.url, "x")
        assert server.requests == []     # nothing was asked of the model


def test_preflight_of_a_closed_port_names_address_and_model():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(ServerUnavailable) as err:
        preflight(url, "m", retries=0)
    assert str(err.value).startswith(f"the model server at {url} (model m) is unavailable: no answer to "
                                     f"GET /models: ConnectionError: ")
    assert (err.value.base_url, err.value.model) == (url, "m")


def test_the_run_asks_only_server_agents_with_their_defaults():
    assert runner.preflight("oracle", {}) is None and runner.preflight("random", {}) is None
    with TestServer("qwen3-vl") as server:     # lists "default", the agents' default --model
        assert runner.preflight("http", {"base_url": server.url}) == {
            "base_url": server.url, "model": "default",
            "listed": {"id": "default", "object": "model", "owned_by": "clinigym-test"}}
        with pytest.raises(ModelNotServed):
            runner.preflight("cua", {"base_url": server.url, "model": "qwen"})


# --- mid-run: no answer is the server's fault, a refusal or an empty answer the model's ------

@pytest.mark.parametrize("failure", ["500", "malformed", "timeout"])
def test_a_server_without_a_usable_reply_raises(failure):
    with TestServer("qwen3-vl", lambda rgb, text: (10.0, 10.0), failures=[failure] * 3, hang=1.0) as server:
        http = HttpAgent(family="qwen3-vl", base_url=server.url, model="m", retries=2, backoff=0.01, timeout=0.5)
        with pytest.raises(ServerUnavailable) as err:
            http.act(OBS, {})
    assert str(err.value).startswith(f"the model server at {server.url} (model m) is unavailable: 3 attempts "
                                     f"failed, the last with ")


def test_a_closed_port_mid_run_raises_for_both_agents():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    for agent in (HttpAgent(family="seeclick", base_url=url, retries=1, backoff=0.01, timeout=1),
                  CuaAgent(format="json", base_url=url, retries=1, backoff=0.01, timeout=1)):
        with pytest.raises(ServerUnavailable, match=r"\(model default\) is unavailable: 2 attempts failed, the "
                                                    r"last with ConnectionError"):
            agent.act(OBS, {})


# --- bookkeeping: out of the metrics, run again on resume -----------------------------------

def _episode(out, number: int, outcome: EpisodeOutcome, correct: bool = True):
    screen = np.zeros((4, 6, 3), np.uint8)
    with numbered(number):
        rec = new_episode(out / "episodes", f"orthanc-s{number}",
                          EpisodeHeader(scenario=f"orthanc/s{number}", app="orthanc", overview="", n_steps=1,
                                        coordinates={}))
    rec.step(StepRecord(step=0, instruction="", expected_action="click", raw_action=None, action=None,
                        correct=correct), screen, screen)
    rec.finish(outcome)
    return rec.folder


def test_an_infrastructure_error_is_in_no_metric_and_runs_again(tmp_path):
    _episode(tmp_path, 1, EpisodeOutcome("complete", 1, 1))
    _episode(tmp_path, 2, EpisodeOutcome("abandoned"), correct=False)    # its server died after the first step
    end_as_error(tmp_path / "episodes", 2, f"{SERVER_FAILED}: 4 attempts failed")
    header = json.loads(next((tmp_path / "episodes").glob("0002-*/episode.json")).read_text())
    assert header["outcome"] == {"status": "error", "steps_correct": 0, "actions": 0, "cause": "infrastructure",
                                 "reason": "model server unavailable: 4 attempts failed", "judgment": None}
    summary, results = score_dirs([tmp_path / "episodes"])
    assert (summary["n_tasks"], summary["tca"], summary["infrastructure_errors"], len(results)) == (1, 1.0, 1, 1)
    refs = [ScenarioRef(f"/s/s{i}.yaml", f"orthanc/s{i}", "orthanc") for i in (1, 2, 3, 4)]
    planned = plan_episodes(refs, episodes=1, seed=0)
    found = survey(tmp_path / "episodes")
    assert found.finished == frozenset({1}) and [f.name for f in found.partial] == ["0002-orthanc-s2"]
    errors = [EpisodeError(2, "orthanc/s2", 0, "unavailable", cause=SERVER_FAILED),
              EpisodeError(3, "orthanc/s3", 0, "not run: down", cause=SERVER_DOWN),
              EpisodeError(4, "orthanc/s4", 0, "the program's own error")]
    todo, kept = pending(planned, found, errors)
    assert [p.number for p in todo] == [2, 3] and kept == [errors[2]]
    assert errors[1].summary() == {"scenario": "orthanc/s3", "episode": 0, "error": "not run: down",
                                   "traceback": "", "cause": "model server down"}
