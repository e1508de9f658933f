"""Agents by name. A factory takes the environment (only the oracle uses it), a seed
and the agent's own options (for `http`: family, base_url, model, ...)."""
from __future__ import annotations

from typing import Callable

from clinigym.agents.base import Agent
from clinigym.agents.oracle import OracleAgent
from clinigym.agents.random import RandomAgent


def _ocr(env, seed=None, **options):
    from clinigym.agents.ocr import OcrAgent   # loads the OCR models: only when asked for
    return OcrAgent(env, seed, **options)


def _http(env, seed=None, **options):
    from clinigym.agents.http import HttpAgent
    return HttpAgent(env, seed, **options)


def _guiactor(env, seed=None, **options):
    from clinigym.agents.guiactor import GuiActorAgent   # torch, transformers: only when asked for
    return GuiActorAgent(env, seed, **options)


AGENTS: dict[str, tuple[Callable[..., Agent], str]] = {
    "oracle": (lambda env, seed=None: OracleAgent(env), "the scenario's ground truth: centre of each live target"),
    "random": (lambda env, seed=None: RandomAgent(env, seed), "uniform random clicks (chance baseline)"),
    "ocr": (_ocr, "offline OCR grounding: instruction words matched to on-screen text, icon templates"),
    "http": (_http, "a GUI-grounding model behind an OpenAI-compatible API (--model-family, --base-url)"),
    "guiactor": (_guiactor, "GUI-Actor in-process: a click from its action head's attention over screen "
                            "patches (extra `guiactor`, --checkpoint PATH)"),
}


def make_agent(name: str, env, seed: int | None = None, **options) -> Agent:
    if name not in AGENTS:
        raise KeyError(f"unknown agent {name!r}; known: {', '.join(AGENTS)}")
    return AGENTS[name][0](env, seed, **options)
