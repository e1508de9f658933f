"""The HTTP model agent against the OpenAI-compatible test server, over real HTTP on
loopback: every family's prompt, answer and coordinate conversion, and the error paths."""
import numpy as np
import pytest

from clinigym.agents.families import FAMILIES
from clinigym.agents.http import HttpAgent
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
def test_persistent_failure_is_no_prediction(failure):
    with TestServer("qwen3-vl", FixedGrounder(), failures=[failure] * 3, hang=1.0) as server:
        agent = HttpAgent(family="qwen3-vl", base_url=server.url, retries=2, backoff=0.01, timeout=0.5)
        action = agent.act(OBS, {})
    assert action.point is None          # reported by the environment as no_prediction
    if failure == "empty":
        assert action.meta["raw"] == "" and action.meta["errors"] == []
    else:
        assert len(action.meta["errors"]) == 3


def test_unreachable_server_is_no_prediction():
    agent = HttpAgent(family="seeclick", base_url="http://127.0.0.1:9/v1", retries=1, backoff=0.01, timeout=1)
    action = agent.act(OBS, {})
    assert action.point is None and action.meta["errors"]


def test_instruction_extracted_from_each_template():
    for name, family in FAMILIES.items():
        prompt = family.build_messages("Open the 'File' menu.", (1920, 1080), "data:image/png;base64,")
        sent = family.resize_for((1920, 1080))
        assert instruction_of(family, prompt.messages, sent, prompt.api) == "Open the 'File' menu.", name


