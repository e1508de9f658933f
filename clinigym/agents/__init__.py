"""Agents by name. Each factory takes the environment (only the oracle uses it)
and a seed."""
from __future__ import annotations

from typing import Callable

from clinigym.agents.base import Agent
from clinigym.agents.oracle import OracleAgent
from clinigym.agents.random import RandomAgent

AGENTS: dict[str, Callable[..., Agent]] = {
    "oracle": lambda env, seed=None: OracleAgent(env),
    "random": lambda env, seed=None: RandomAgent(env, seed),
}


def make_agent(name: str, env, seed: int | None = None) -> Agent:
    if name not in AGENTS:
        raise KeyError(f"unknown agent {name!r}; known: {', '.join(AGENTS)}")
    return AGENTS[name](env, seed)
