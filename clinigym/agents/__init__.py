"""Agents: the protocol (`base`), the registry (`registry`), agents from outside clinigym
(`plugins`: `package.module:factory` and the `clinigym.agents` entry points), and the
agents: `oracle` (privileged), `random`, `ocr`, `http` with its model `families`, `cua`,
`guiactor`; what model-server agents set in their requests (`request`)."""
from clinigym.agents.base import Agent
from clinigym.agents.registry import AGENTS, AgentEntry, Option, all_agents, make_agent, resolve

__all__ = ["AGENTS", "Agent", "AgentEntry", "Option", "all_agents", "make_agent", "resolve"]
