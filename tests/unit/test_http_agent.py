"""The HTTP model agent against the OpenAI-compatible test server, over real HTTP on
loopback: every family's prompt, answer and coordinate conversion, and the error paths."""
import numpy as np
import pytest

from clinigym.agents.families import FAMILIES
from clinigym.agents.http import HttpAgent, ServerUnavailable
from clinigym.testing.openai_server import TestServer, instruction_of

OBS = {"screenshot": np.full((1080, 1920, 3), 200, np.uint8),
       "instruction": "Click on 'Delete this study'.", "step": 0}


class FixedGrounder:
    """Answers a fixed point in the pixels of the image it receives, and remembers what it saw."""

    def __init__(self, fraction=(0.3, 0.6)):
        self.fraction, self.seen = fraction, []

    def __call__(self, rgb, instruction):
        self.seen.append((rgb.shape, instruction))
        return (self.fraction[0] * (rgb.shape[1] - 1), self.fraction[1] * (rgb.shape[0] - 1))


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_round_trip_over_http(name):
    family = FAMILIES[name]
    grounder = FixedGrounder()
    with TestServer(name, grounder) as server:
        agent = HttpAgent(family=name, base_url=server.url, model="test")
        action = agent.act(OBS, {})
    sent = family.resize_for((1920, 1080))
    # The server got the image at the family's size and the instruction back out of the prompt.
    assert grounder.seen == [((sent[1], sent[0], 3), "Click on 'Delete this study'.")]
    qx, qy = family.quantum((1920, 1080))
    assert action.point == pytest.approx((0.3 * 1919, 0.6 * 1079), abs=max(1.5, qx, qy))
    assert action.type == "click"
    meta = action.meta
    assert meta["family"] == name and meta["raw"] and meta["latency"] > 0 and meta["errors"] == []
    assert "<screenshot>" in str(meta["prompt"]) and "base64" not in str(meta["prompt"])


def test_retries_then_answer():
    with TestServer("uground-v1", FixedGrounder(), failures=["500", "malformed"]) as server:
        action = HttpAgent(family="uground-v1", base_url=server.url, backoff=0.01).act(OBS, {})
    assert action.point is not None
    assert len(action.meta["errors"]) == 2 and "HTTP 500" in action.meta["errors"][0]
    assert "malformed JSON" in action.meta["errors"][1]


@pytest.mark.parametrize("failure", ["500", "malformed", "empty", "timeout"])
def test_persistent_failure(failure):
    """An empty answer is the model's: no prediction. No usable reply is the server's fault:
    ServerUnavailable (never recorded as no_prediction; see test_preflight.py)."""
    with TestServer("qwen3-vl", FixedGrounder(), failures=[failure] * 3, hang=1.0) as server:
        agent = HttpAgent(family="qwen3-vl", base_url=server.url, retries=2, backoff=0.01, timeout=0.5)
        if failure != "empty":
            with pytest.raises(ServerUnavailable, match="3 attempts failed"):
                agent.act(OBS, {})
            return
        action = agent.act(OBS, {})
    assert action.point is None          # reported by the environment as no_prediction
    assert action.meta["raw"] == "" and action.meta["errors"] == []


def test_unreachable_server_raises():
    agent = HttpAgent(family="seeclick", base_url="http://127.0.0.1:9/v1", retries=1, backoff=0.01, timeout=1)
    with pytest.raises(ServerUnavailable, match=r"at http://127.0.0.1:9/v1 \(model default\) is unavailable"):
        agent.act(OBS, {})


def test_instruction_extracted_from_each_template():
    for name, family in FAMILIES.items():
        prompt = family.build_messages("Open the 'File' menu.", (1920, 1080), "data:image/png;base64,")
        sent = family.resize_for((1920, 1080))
        assert instruction_of(family, prompt.messages, sent, prompt.api) == "Open the 'File' menu.", name




# --- what goes into the request: sampling, the key, extra fields -----------------------------

KEY = "sk-test-0123456789"


def test_sampling_extra_fields_and_the_key_on_the_wire(monkeypatch):
    monkeypatch.setenv("LAB_MODEL_KEY", KEY)
    with TestServer("qwen2.5-vl", FixedGrounder()) as server:
        agent = HttpAgent(family="qwen2.5-vl", base_url=server.url, model="m", temperature=0.3, max_tokens=77,
                          api_key_env="LAB_MODEL_KEY", extra_body='{"top_k": 5, "repetition_penalty": 1.05}')
        action = agent.act(OBS, {})
    [body], [headers] = server.requests, server.headers
    assert {k: body[k] for k in ("model", "temperature", "max_tokens", "top_k", "repetition_penalty")} == \
        {"model": "m", "temperature": 0.3, "max_tokens": 77, "top_k": 5, "repetition_penalty": 1.05}
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert action.point is not None and KEY not in repr(action.meta)


def test_defaults_greedy_and_openai_api_key_when_set(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with TestServer("uground-v1", FixedGrounder()) as server:
        HttpAgent(family="uground-v1", base_url=server.url).act(OBS, {})
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        HttpAgent(family="uground-v1", base_url=server.url).act(OBS, {})
    assert [(b["temperature"], b["max_tokens"]) for b in server.requests] == [(0.0, 512), (0.0, 512)]
    assert "Authorization" not in server.headers[0] and server.headers[1]["Authorization"] == f"Bearer {KEY}"


def test_extra_fields_go_into_responses_requests_too():
    with TestServer("openai-computer-use", FixedGrounder()) as server:
        HttpAgent(family="openai-computer-use", base_url=server.url, extra_body={"max_output_tokens": 300},
                  temperature=0.7).act(OBS, {})
    [body] = server.requests
    # the Responses API gets no temperature (its computer-use models refuse one), only what is asked for
    assert body["max_output_tokens"] == 300 and "temperature" not in body and "max_tokens" not in body


@pytest.mark.parametrize("options, message", [
    ({"api_key_env": "CLINIGYM_UNSET_KEY_VAR"}, "api_key_env: CLINIGYM_UNSET_KEY_VAR is not set (or empty) in "
                                                "this environment"),
    ({"api_key_env": "sk=abc"}, "api_key_env: 'sk=abc' is not a variable name (give the NAME, not the key)"),
    ({"extra_body": "[1, 2]"}, 'extra_body: a JSON object ({"field": value, ...}), not a list'),
    ({"extra_body": "{top_k: 5}"}, "extra_body: not JSON: Expecting property name enclosed in double quotes: "
                                   "line 1 column 2 (char 1)"),
    ({"extra_body": {"messages": [], "temperature": 1}}, "extra_body: the agent sets messages, temperature (use "
                                                         "--temperature) itself"),
    ({"temperature": -0.1}, "temperature: at least 0, not -0.1"),
    ({"temperature": float("nan")}, "temperature: at least 0, not nan"),
    ({"max_tokens": 0}, "max_tokens: at least 1, not 0"),
])
def test_bad_request_options_are_refused(monkeypatch, options, message):
    from clinigym.agents.request import OptionError
    monkeypatch.delenv("CLINIGYM_UNSET_KEY_VAR", raising=False)
    with pytest.raises(OptionError) as exc:
        HttpAgent(family="qwen3-vl", base_url="http://127.0.0.1:9/v1", **options)
    assert str(exc.value) == message


def test_the_server_as_a_process():
    """`python -m clinigym.testing.openai_server`, the stand-in for `vllm serve`: it prints
    its URL once it listens, answers there (a request without a screenshot is refused),
    and stops on SIGTERM with exit 0."""
    import signal
    import subprocess
    import sys

    import requests
    server = subprocess.Popen([sys.executable, "-m", "clinigym.testing.openai_server", "--family", "qwen3-vl"],
                              stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert line.startswith("serving qwen3-vl on http://127.0.0.1:") and line.endswith("/v1\n")
        url = line.split(" on ")[1].strip()
        reply = requests.post(f"{url}/chat/completions", json={"model": "m", "messages": []}, timeout=30)
        assert (reply.status_code, reply.json()) == (400, {"error": {"message": "no image in the request"}})
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
    finally:
        server.kill()
        server.wait()
