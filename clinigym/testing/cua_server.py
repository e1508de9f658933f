"""An OpenAI-compatible server on loopback that answers like a computer-use model in one
format (`clinigym.agents.cua.FORMATS`), its actions chosen by a policy
(`clinigym.testing.policies`): chat completions for UI-TARS, Qwen and JSON, the
Responses API for OpenAI computer use. Each answer is the policy's action written by the
format's own writer, the inverse of the agent's parser. The failures of
`LoopbackServer` apply (HTTP 500, a timeout, malformed JSON, an empty answer); a failed
request does not consume a policy turn.

A live plan or goal episode driven along the reference path (the environment's
privileged interface, in the test only):

    env = gym.make(...)                                   # a plan or goal environment
    obs, info = env.reset(seed=0)
    policy = follow(ground_truth(env))                    # or then_more(follow(...), extra), ...
    with CuaServer("qwen3-vl", policy, env.agent_context().observation_size) as server:
        agent = make_agent("cua", env.agent_context(), format="qwen3-vl", base_url=server.url)
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            done = terminated or truncated
"""
from __future__ import annotations

from typing import Any

from clinigym.agents.cua import Unexpressible, get_format
from clinigym.agents.cua.formats import Format
from clinigym.testing.openai_server import BadRequest, LoopbackServer, chat_reply, last_image, responses_reply
from clinigym.testing.policies import Policy, PolicyRequest


class CuaServer(LoopbackServer):
    def __init__(self, format: str | Format, policy: Policy, observation_size: tuple[int, int],
                 failures: list[str] = (), hang: float = 5.0):
        self.format = get_format(format) if isinstance(format, str) else format
        self.policy = policy
        self.sizes = self.format.sizes(tuple(observation_size))
        self.turn = 0
        self.answers: list[Any] = []       # every native answer given, in order
        super().__init__(failures, hang)

    def reply(self, api: str, body: dict) -> dict[str, Any]:
        if api != self.format.api:
            raise BadRequest(f"{self.format.name} is spoken to over {self.format.api}, not {api}")
        rgb = last_image(body)
        if rgb is None or (rgb.shape[1], rgb.shape[0]) != self.sizes.sent:
            got = None if rgb is None else (rgb.shape[1], rgb.shape[0])
            raise BadRequest(f"expected a screenshot of {self.sizes.sent}, got {got}")
        with self._lock:   # one policy turn at a time
            turn = self.turn
            try:
                action = self.policy(PolicyRequest(turn, rgb, body))
                native = self.format.write(action, self.sizes)
            except (Unexpressible, IndexError, RuntimeError) as exc:   # the test's script or path, shown to it
                raise BadRequest(f"turn {turn}: {type(exc).__name__}: {exc}") from None
            self.turn += 1
            self.answers.append(native)
        return responses_reply(native, f"resp_{turn}") if api == "responses" else chat_reply(native, body.get("model"))

    def empty(self, api: str, body: dict) -> dict[str, Any]:
        return responses_reply([], "resp_empty") if api == "responses" else chat_reply("", body.get("model"))
