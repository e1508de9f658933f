"""The HTTP model agent against the OpenAI-compatible test server, over real HTTP on
loopback, on live Orthanc Explorer: every family end to end, and `clinigym run --agent
http` with the request options (sampling, extra fields, the key from a variable)."""
import pytest

from clinigym.agents.families import FAMILIES
from clinigym.agents.http import HttpAgent
from clinigym.testing.openai_server import TestServer


@pytest.fixture(scope="module")
def ocr_grounder():
    """One grounder for every server: its OCR cache is shared, since a deterministic
    program shows the same screens to every family."""
    from clinigym.testing.openai_server import ocr_grounder
    return ocr_grounder()


@pytest.mark.live
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_end_to_end_on_live_orthanc(name, backends, ocr_grounder, tmp_path):
    from clinigym.envs.steps import StepsEnv
    from clinigym.recording import read_episode
    from clinigym.spec.scenarios import select

    scenario = select("orthanc/open-patient-study")[0]
    with TestServer(name, ocr_grounder) as server:
        env = StepsEnv(scenario, backend=backends("orthanc"), record_dir=tmp_path, agent_name=f"http:{name}")
        agent = HttpAgent(env.agent_context(), family=name, base_url=server.url, model="test")
        obs, info = env.reset(seed=0)
        done = False
        while not done:
            obs, _, term, trunc, info = env.step(agent.act(obs, info))
            done = term or trunc
        env.close()
    episode = read_episode(next(tmp_path.iterdir()))
    assert episode.status == "complete", [s.failure for s in episode.steps]
    assert len(server.requests) == len(scenario.steps)
    for rec in episode.steps:   # raw text, parsed point, prompt and latency recorded per step
        assert rec.agent["family"] == name and rec.agent["raw"] and rec.agent["points"]
        assert rec.agent["latency"] > 0 and rec.agent["prompt"]


@pytest.mark.live
def test_clinigym_run_sends_the_request_options(ocr_grounder, tmp_path):
    """`clinigym run --agent http` as one would run it against vLLM: the sampling, the
    extra fields and the key (from the named variable) reach the server in every request;
    run.json keeps the options, the variable's name and never the key."""
    import json
    import os
    import subprocess
    import sys

    from clinigym.spec.scenarios import select

    key, out = "sk-live-4d1c9e", tmp_path / "run"
    scenario = select("orthanc/open-patient-study")[0]
    with TestServer("ui-tars-1.5", ocr_grounder, models=("tars",)) as server:   # the preflight asks
        done = subprocess.run(
            [sys.executable, "-m", "clinigym.cli", "run", "--scenario", "orthanc/open-patient-study",
             "--agent", "http", "--model-family", "ui-tars-1.5", "--base-url", server.url, "--model", "tars",
             "--temperature", "0.3", "--max-tokens", "77", "--api-key-env", "LAB_SERVER_KEY",
             "--extra-body", '{"top_k": 5}', "--out", str(out), "--no-progress", "--json"],
            env={**os.environ, "LAB_SERVER_KEY": key}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tca"] == 1.0
    assert len(server.requests) == len(scenario.steps)
    for body, headers in zip(server.requests, server.headers):
        assert {k: body[k] for k in ("model", "temperature", "max_tokens", "top_k")} == \
            {"model": "tars", "temperature": 0.3, "max_tokens": 77, "top_k": 5}
        assert headers["Authorization"] == f"Bearer {key}"
    options = json.loads((out / "run.json").read_text())["agent_options"]
    assert options == {"family": "ui-tars-1.5", "base_url": server.url, "model": "tars", "timeout": 120.0,
                       "temperature": 0.3, "max_tokens": 77, "api_key_env": "LAB_SERVER_KEY",
                       "extra_body": {"top_k": 5}}
    assert not [p for p in out.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
