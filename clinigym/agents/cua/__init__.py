"""Computer-use agents: a model that sees the screen, acts freely and ends the episode
itself (the plan and goal modes), each model spoken to in its own published format and
action vocabulary over an OpenAI-compatible API.

    agent = make_agent("cua", env.agent_context(), format="qwen3-vl", base_url=url, model="qwen3-vl")

One registry entry (`cua`, with `--cua-format`) rather than one per format: the loop,
its options (server, model, timeout, history) and its recording are the same for every
format, and a format is data (`FORMATS`): a prompt, a parser into the environment's
actions, a writer for test servers, and its coordinate convention.

Modules: `base` (shared types, keys, notches), `history` (past turns and their layouts),
`chat` (the chat-completions dialogue), `uitars`, `qwen`, `json_actions`, `responses`
(OpenAI computer use), `formats` (the table), `agent` (the loop).
"""
from clinigym.agents.cua.agent import CuaAgent
from clinigym.agents.cua.base import Sizes, Step, Unexpressible
from clinigym.agents.cua.formats import FORMATS, get_format

__all__ = ["FORMATS", "CuaAgent", "Sizes", "Step", "Unexpressible", "get_format"]
