"""Agents by name: each entry builds its agent from the public `AgentContext`, a seed and
the agent's own options, which the entry declares (the CLI offers them as flags).

Only an entry marked `privileged` (the oracle) is given the environment's ground truth,
and it cannot be built without it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clinigym.agents.base import Agent
from clinigym.core.context import AgentContext
from clinigym.core.errors import AgentError


@dataclass(frozen=True)
class Option:
    """One option of an agent: `--flag` on the command line, `dest` as the keyword."""
    flag: str
    dest: str
    help: str
    default: Any = None
    type: Callable[[str], Any] = str


@dataclass(frozen=True)
class AgentEntry:
    name: str
    description: str
    factory: Callable[..., Agent]              # (context, seed, **options) -> Agent
    options: tuple[Option, ...] = ()
    privileged: bool = False                   # gets `privileged=` the ground truth


def _oracle(context: AgentContext, seed: int | None = None, *, privileged) -> Agent:
    from clinigym.agents.oracle import OracleAgent
    return OracleAgent(privileged)


def _random(context: AgentContext, seed: int | None = None) -> Agent:
    from clinigym.agents.random import RandomAgent
    return RandomAgent(context, seed)


def _grounding(name: str, context: AgentContext | None, build: Callable[[], Agent]) -> Agent:
    """A single-step grounding agent in the context's mode: as is in the steps mode (and
    without a context), working down the step list in the plan mode; it cannot read a goal
    sentence (refused before it loads its models)."""
    mode = context.mode if context is not None else "steps"
    if mode == "goal":
        raise AgentError(f"the {name} agent grounds step instructions: run it in the steps or plan mode")
    if mode == "plan":
        from clinigym.agents.plan import PlanFollower
        return PlanFollower(build())
    return build()


def _ocr(context: AgentContext, seed: int | None = None, **options) -> Agent:
    from clinigym.agents.ocr import OcrAgent  # loads the OCR models: only when asked for
    return _grounding("ocr", context, lambda: OcrAgent(context, seed, **options))


def _http(context: AgentContext, seed: int | None = None, **options) -> Agent:
    from clinigym.agents.http import HttpAgent
    return _grounding("http", context, lambda: HttpAgent(context, seed, **options))


def _cua(context: AgentContext, seed: int | None = None, **options) -> Agent:
    from clinigym.agents.cua import CuaAgent
    return CuaAgent(context, seed, **options)


def _guiactor(context: AgentContext, seed: int | None = None, **options) -> Agent:
    from clinigym.agents.guiactor import GuiActorAgent  # torch, transformers: only when asked for
    return _grounding("guiactor", context, lambda: GuiActorAgent(context, seed, **options))


AGENTS: dict[str, AgentEntry] = {e.name: e for e in (
    AgentEntry("oracle", "the scenario's ground truth: centre of each live target (privileged)", _oracle,
               privileged=True),
    AgentEntry("random", "uniform random clicks (chance baseline)", _random),
    AgentEntry("ocr", "offline OCR grounding: instruction words matched to on-screen text, icon templates "
                      "(extra `ocr`); in the plan mode it works down the step list", _ocr),
    AgentEntry("http", "a GUI-grounding model behind an OpenAI-compatible API (--model-family, --base-url)", _http,
               (Option("--model-family", "family", "http agent: the model family (see `clinigym agents`)",
                       "ui-tars-1.5"),
                Option("--base-url", "base_url", "http agent: API base URL", "http://127.0.0.1:8000/v1"),
                Option("--model", "model", "http agent: model name on the server", "default"),
                Option("--timeout", "timeout", "http agent: seconds per request", 120.0, float))),
    AgentEntry("cua", "a computer-use model behind an OpenAI-compatible API that acts freely and ends the "
                      "episode itself (plan and goal modes), in its own format (--cua-format)", _cua,
               (Option("--cua-format", "format", "cua agent: the model's format: ui-tars-1.5, qwen2.5-vl, qwen3-vl, "
                                                 "openai-computer-use or json", "qwen3-vl"),
                Option("--base-url", "base_url", "cua agent: API base URL", "http://127.0.0.1:8000/v1"),
                Option("--model", "model", "cua agent: model name on the server", "default"),
                Option("--timeout", "timeout", "cua agent: seconds per request", 120.0, float),
                Option("--cua-images", "images", "cua agent: screenshots per request, the current one included "
                                                 "(earlier turns stay as text)", 3, int))),
    AgentEntry("guiactor", "GUI-Actor in-process: a click from its action head's attention over screen "
                           "patches (extra `guiactor`, --checkpoint PATH)", _guiactor,
               (Option("--checkpoint", "checkpoint", "guiactor agent: a local GUI-Actor checkpoint folder"),)),
)}


def make_agent(name: str, context: AgentContext, seed: int | None = None, privileged=None, **options) -> Agent:
    """The agent `name`, built from the public context. `privileged` (the environment's
    `clinigym.envs.ground_truth`) is given only to an agent whose entry asks for it."""
    if name not in AGENTS:
        raise KeyError(f"unknown agent {name!r}; known: {', '.join(AGENTS)}")
    entry = AGENTS[name]
    if entry.privileged:
        if privileged is None:
            raise ValueError(f"the {name} agent needs the environment's ground truth (privileged=)")
        return entry.factory(context, seed, privileged=privileged, **options)
    return entry.factory(context, seed, **options)


def default_options(name: str) -> dict[str, Any]:
    return {o.dest: o.default for o in AGENTS[name].options}
