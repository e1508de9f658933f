"""The computer-use agent end to end over real HTTP on loopback: the agent talks to the
real test server (`clinigym.testing.cua_server.CuaServer`, no environment) in every
format for several turns, driven by scripted policies, and returns exactly the scripted
actions (within each format's coordinate quantum); what it returns passes the
environment's own action parser. Also the failure paths, the history on the wire, the
Responses chain, the policies, and the agent's registry entry and command-line flags."""
from __future__ import annotations

import argparse

import numpy as np
import pytest

from clinigym.agents import AGENTS, make_agent
from clinigym.agents.cua import FORMATS, CuaAgent, get_format
from clinigym.agents.http import ServerUnavailable, data_url
from clinigym.core.actions import Action
from clinigym.core.context import AgentContext
from clinigym.envs.base import parse_action
from clinigym.testing.cua_server import CuaServer
from clinigym.testing.openai_server import LoopbackServer, chat_reply
from clinigym.testing.policies import (
    PolicyRequest,
    claim_done,
    follow,
    repeat,
    script,
    stop_early,
    then_more,
    wrong_answer,
)

HD = (1920, 1080)
P, Q = (1234.5, 456.7), (300.2, 700.9)     # inside 1920x1080 and 1280x800


def obs(size=HD, shade=200, instruction="Delete the study of PHANTOM^ALICE."):
    return {"screenshot": np.full((size[1], size[0], 3), shade, np.uint8), "instruction": instruction, "step": 0}


def close(got, want, tol):
    def near(p, q):
        return (p is None) == (q is None) and (p is None or all(abs(a - b) <= tol for a, b in zip(p, q)))
    return isinstance(got, Action) and (got.type, got.text, got.keys, got.scroll) == \
        (want.type, want.text, want.keys, want.scroll) and near(got.point, want.point) and \
        near(got.end_point, want.end_point)


SCRIPT = [Action("click", P), Action("double_click", Q), Action("drag", P, Q), Action("key", keys="ctrl+s"),
          Action("type", text="PHANTOM"), Action("scroll", Q, scroll=(0, 5)), Action("wait"),
          Action("right_click", Q), Action("hover", P), Action("done")]


def expected(name):
    """The actions the agent returns for SCRIPT: the Qwen tool drags from the cursor, so
    its writer moves there first (a hover), then drags."""
    out = []
    for a in SCRIPT:
        out += [Action("hover", a.point), a] if a.type == "drag" and name.startswith("qwen") else [a]
    return out


@pytest.mark.parametrize("size", [HD, (1280, 800)])
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_format_returns_the_scripted_actions(name, size):
    fmt = get_format(name)
    sizes = fmt.sizes(size)
    want = expected(name)
    with CuaServer(name, script(*SCRIPT), size) as server:
        agent = CuaAgent(AgentContext(size), format=name, base_url=server.url, model="test", backoff=0.01)
        got = [agent.act(obs(size), {"mode": "goal"}) for _ in want]
    tol = max(fmt.space.quantum(sizes.observation, sizes.sent)) + 1e-9
    assert all(close(g, w, tol) for g, w in zip(got, want)), got
    assert server.turn == len(SCRIPT) == len(server.requests)        # one request per model answer
    assert all(r["model"] == "test" for r in server.requests)
    for action in got:
        # the environment's own parser takes every one, the meta with it
        parsed, invalid, meta = parse_action(action, *size)
        assert invalid is None and parsed == action and meta["format"] == name
    first = got[0].meta
    assert first["raw"] and first["latency"] > 0 and first["errors"] == [] and first["turn"] == 0
    assert "<screenshot>" in str(first["prompt"]) and "base64" not in str(first["prompt"])
    assert first["sent_size"] == list(sizes.sent) and first["parsed"] == [got[0].to_json()]
    if name.startswith("qwen"):
        drag = got[3].meta
        assert drag["queued"] is True and drag["turn"] == 2 and drag["native"] == "left_click_drag"


def test_type_at_a_point_is_a_click_then_the_typing():
    with CuaServer("ui-tars-1.5", script(Action("type", P, text="PHANTOM")), HD) as server:
        agent = CuaAgent(format="ui-tars-1.5", base_url=server.url)
        got = [agent.act(obs(), {}) for _ in range(2)]
    assert [a.type for a in got] == ["click", "type"] and got[1].text == "PHANTOM" and server.turn == 1
    assert server.answers[0].endswith("Action: click(start_box='(1242,462)')\n\ntype(content='PHANTOM')")


def test_uitars_history_on_the_wire():
    with CuaServer("ui-tars-1.5", repeat(Action("click", P)), HD) as server:
        agent = CuaAgent(format="ui-tars-1.5", base_url=server.url, images=2)
        for shade in (10, 20, 30):
            agent.act(obs(shade=shade), {})
        agent.reset()
        agent.act(obs(shade=40), {})
    third, after_reset = server.requests[2]["messages"], server.requests[3]["messages"]
    images = [p["image_url"]["url"] for m in third if isinstance(m["content"], list)
              for p in m["content"] if p["type"] == "image_url"]
    sent = get_format("ui-tars-1.5").sizes(HD).sent
    assert images == [data_url(obs(shade=s)["screenshot"], sent) for s in (20, 30)]    # the window: 2 screenshots
    assert [m["content"] for m in third if m["role"] == "assistant"] == server.answers[:2]
    assert [m["role"] for m in after_reset] == ["user", "user"]                         # a new episode


def test_openai_chain_over_http():
    with CuaServer("openai-computer-use", script(Action("click", P), Action("answer", text="3 series")), HD) as server:
        agent = CuaAgent(format="openai-computer-use", base_url=server.url)
        first = agent.act(obs(shade=10), {})
        second = agent.act(obs(shade=20), {})
    assert first.type == "click" and second == Action("answer", text="3 series")
    assert "previous_response_id" not in server.requests[0]
    assert server.requests[1]["previous_response_id"] == "resp_0"
    assert server.requests[1]["input"] == [
        {"type": "computer_call_output", "call_id": "call_0", "acknowledged_safety_checks": [],
         "output": {"type": "input_image", "image_url": data_url(obs(shade=20)["screenshot"], HD)}}]


# --- what the environment cannot execute -----------------------------------------------------

class Canned(LoopbackServer):
    """Answers chat completions with given texts, one per request."""

    def __init__(self, *texts):
        self.texts = list(texts)
        super().__init__()

    def reply(self, api, body):
        return chat_reply(self.texts.pop(0), body.get("model"))


def test_unmappable_call_is_an_invalid_action():
    triple = '<tool_call>\n{"name": "computer_use", "arguments": {"action": "triple_click", "coordinate": [5, 5]}}' \
             '\n</tool_call>'
    with Canned(triple, "I will now click the button.") as server:
        agent = CuaAgent(format="qwen3-vl", base_url=server.url)
        refused, nothing = agent.act(obs(), {}), agent.act(obs(), {})
    assert refused["type"] == "triple_click" and "no equivalent" in refused["meta"]["problem"]
    assert refused["meta"]["raw"] == triple and refused["meta"]["parsed"] == [None]
    parsed, invalid, _ = parse_action(refused, *HD)
    assert parsed is None and invalid.startswith("unknown action type 'triple_click'")
    assert nothing["type"] is None and nothing["meta"]["problem"] == "no action in the answer"
    assert parse_action(nothing, *HD)[1].startswith("unknown action type None")


def test_retries_then_answer():
    with CuaServer("json", script(Action("click", (812, 44))), HD, failures=["500", "malformed"]) as server:
        action = CuaAgent(format="json", base_url=server.url, backoff=0.01).act(obs(), {})
    assert action == Action("click", (812, 44)) and server.turn == 1       # failed requests cost no policy turn
    assert len(action.meta["errors"]) == 2 and "HTTP 500" in action.meta["errors"][0]
    assert "malformed JSON" in action.meta["errors"][1]


@pytest.mark.parametrize("name", ["qwen3-vl", "openai-computer-use"])
@pytest.mark.parametrize("failure", ["500", "malformed", "timeout", "empty"])
def test_persistent_failure(name, failure):
    """An empty answer is the model's turn without an action; no usable reply is the
    server's fault: ServerUnavailable, and no policy turn is spent."""
    with CuaServer(name, repeat(Action("wait")), HD, failures=[failure] * 3, hang=0.4) as server:
        agent = CuaAgent(format=name, base_url=server.url, retries=2, backoff=0.01, timeout=0.2)
        if failure != "empty":
            with pytest.raises(ServerUnavailable, match="3 attempts failed"):
                agent.act(obs(), {})
        else:
            action = agent.act(obs(), {})
    if failure != "timeout":          # a timed-out request is still answered, late, to nobody
        assert server.turn == 0
    if failure == "empty":
        assert isinstance(action, dict) and action["type"] is None
        assert action["meta"]["problem"] == "no action in the answer" and action["meta"]["errors"] == []


def test_unreachable_server_raises():
    agent = CuaAgent(format="json", base_url="http://127.0.0.1:9/v1", retries=1, backoff=0.01, timeout=1)
    with pytest.raises(ServerUnavailable, match="2 attempts failed, the last with ConnectionError"):
        agent.act(obs(), {})


def test_a_script_run_dry_is_shown_to_the_client():
    with CuaServer("json", script(Action("wait")), HD) as server:
        agent = CuaAgent(format="json", base_url=server.url, retries=0)
        assert agent.act(obs(), {}) == Action("wait")
        dry = agent.act(obs(), {})
    assert dry["type"] is None and "HTTP 400" in dry["meta"]["errors"][0] and "IndexError" in dry["meta"]["errors"][0]


# --- policies ----------------------------------------------------------------------------

class ReferencePath:
    """Stands in for the environment's privileged interface: the next reference action."""

    def __init__(self, *actions):
        self.actions = list(actions)

    def action(self):
        return self.actions.pop(0) if self.actions else None


def run(policy, turns):
    return [policy(PolicyRequest(t, np.zeros((1, 1, 3), np.uint8), {})) for t in range(turns)]


def test_policies():
    a, b, c = Action("click", (1, 2)), Action("click", (3, 4)), Action("key", keys="Delete")
    path = [a, b, Action("done")]
    assert run(follow(ReferencePath(*path)), 3) == path
    assert run(stop_early(follow(ReferencePath(*path)), 1), 3) == [a, Action("done"), Action("done")]
    assert run(claim_done(), 2) == [Action("done")] * 2
    assert run(repeat(c), 3) == [c] * 3
    # the reference path, then one deletion too many, then the path's own ending
    assert run(then_more(follow(ReferencePath(*path)), [c, c]), 5) == [a, b, c, c, Action("done")]
    answered = [a, Action("answer", text="2")]
    assert run(wrong_answer(follow(ReferencePath(*answered)), "3"), 2) == [a, Action("answer", text="3")]
    with pytest.raises(RuntimeError):
        run(follow(ReferencePath()), 1)
    with pytest.raises(IndexError):
        run(script(a), 2)


def test_misbehaving_policy_over_http():
    path = ReferencePath(Action("click", P), Action("done"))
    extra = [Action("right_click", Q), Action("key", keys="Delete")]
    with CuaServer("qwen2.5-vl", then_more(follow(path), extra), HD) as server:
        agent = CuaAgent(format="qwen2.5-vl", base_url=server.url)
        got = [agent.act(obs(), {}) for _ in range(4)]
    assert [a.type for a in got] == ["click", "right_click", "key", "done"] and got[2].keys == "Delete"


# --- registry and command line -------------------------------------------------------------

def test_registry_entry():
    agent = make_agent("cua", AgentContext(HD, actions=("click", "done")), format="json", model="m",
                       base_url="http://127.0.0.1:9/v1", images=2)
    assert isinstance(agent, CuaAgent) and agent.format is FORMATS["json"] and agent.client.model == "m"
    assert agent.dialogue.history.images == 2 and agent.dialogue.settings.actions == ("click", "done")
    names = "ui-tars-1.5, qwen2.5-vl, qwen3-vl, openai-computer-use or json"
    assert names.replace(" or ", ", ").split(", ") == list(FORMATS)
    assert names in next(o.help for o in AGENTS["cua"].options if o.flag == "--cua-format")


def test_shared_flags():
    from clinigym.cli import runs
    parser = argparse.ArgumentParser()
    runs.register(parser.add_subparsers())
    shared = ["run", "--out", "x", "--base-url", "http://h:1/v1", "--model", "m", "--temperature", "0.5"]
    cua = runs._agent_options(parser.parse_args([*shared, "--agent", "cua", "--cua-images", "5"]))
    server = {"base_url": "http://h:1/v1", "model": "m", "temperature": 0.5, "api_key_env": None, "extra_body": None}
    assert cua == {"format": "qwen3-vl", **server, "timeout": 120.0, "max_tokens": 1024, "images": 5}
    http = runs._agent_options(parser.parse_args([*shared, "--agent", "http", "--timeout", "9",
                                                  "--extra-body", '{"top_k": 5}']))
    assert http == {"family": "ui-tars-1.5", **server, "timeout": 9.0, "max_tokens": 512, "extra_body": {"top_k": 5}}


@pytest.mark.parametrize("argv, message", [
    (["--cua-format", "qwen4"], "argument --cua-format: invalid choice: 'qwen4' (choose from 'ui-tars-1.5', "
                                "'qwen2.5-vl', 'qwen3-vl', 'openai-computer-use', 'json')"),
    (["--model-family", "ui_tars"], "argument --model-family: invalid choice: 'ui_tars' (choose from "
                                    "'ui-tars-1.5', 'ui-tars',"),
    (["--extra-body", '{"stream": true}'], "argument --extra-body: extra_body: the agent sets stream itself"),
    (["--max-tokens", "many"], "argument --max-tokens: max_tokens: a whole number, not 'many'"),
    (["--timeout", "soon"], "argument --timeout: invalid float value: 'soon'"),
])
def test_bad_flags_are_refused_when_parsed(capsys, argv, message):
    from clinigym.cli import runs
    parser = argparse.ArgumentParser(prog="clinigym")
    runs.register(parser.add_subparsers())
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["run", "--out", "x", "--agent", "cua", *argv])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"clinigym run: error: {message}")


def test_sampling_extra_fields_and_the_key_of_the_cua_agent(monkeypatch):
    monkeypatch.setenv("LAB_CUA_KEY", "sk-cua")
    with CuaServer("qwen3-vl", script(Action("click", P), Action("done")), HD) as server:
        agent = CuaAgent(format="qwen3-vl", base_url=server.url, temperature=1.0, max_tokens=64,
                         api_key_env="LAB_CUA_KEY", extra_body={"top_p": 0.9})
        got = [agent.act(obs(), {}) for _ in range(2)]
    assert [a.type for a in got] == ["click", "done"]
    assert [(b["temperature"], b["max_tokens"], b["top_p"]) for b in server.requests] == [(1.0, 64, 0.9)] * 2
    assert [h["Authorization"] for h in server.headers] == ["Bearer sk-cua"] * 2
    assert "sk-cua" not in repr([a.meta for a in got])
