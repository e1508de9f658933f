"""Agents: the protocol (`base`), the registry (`registry`), and the agents: `oracle`
(privileged), `random`, `ocr`, `http` with its model `families`, `guiactor`."""
from clinigym.agents.base import Agent
from clinigym.agents.registry import AGENTS, AgentEntry, Option, make_agent

__all__ = ["AGENTS", "Agent", "AgentEntry", "Option", "make_agent"]
