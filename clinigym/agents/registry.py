"""Agents by name: each entry builds its agent from the public `AgentContext`, a seed and
the agent's own options, which the entry declares (the CLI offers them as flags).

Only an entry marked `privileged` (the oracle) is given the environment's ground truth,
and it cannot be built without it. Besides the built-in agents (`AGENTS`), an agent may
come from outside clinigym: a `package.module:factory` spec, or an entry point of the
group `clinigym.agents` (`clinigym.agents.plugins`, which states the factory contract);
`resolve` finds any of them, `all_agents` lists the built-in and the installed ones.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clinigym.agents import plugins, request
from clinigym.agents.base import Agent
from clinigym.agents.families.observed import SCREENSHOT
from clinigym.core.context import AgentContext
from clinigym.core.errors import AgentError


@dataclass(frozen=True)
class Option:
    """One option of an agent: `--flag` on the command line, `dest` as the keyword.
    `type` turns the flag's text into the value (an `OptionError` is its message);
    `choices`, when given, returns the valid values (asked for when the CLI is built:
    some tables load their parsers)."""
    flag: str
    dest: str
    help: str
    default: Any = None
    type: Callable[[str], Any] = str
    choices: Callable[[], tuple[str, ...]] | None = None


@dataclass(frozen=True)
class AgentEntry:
    name: str
    description: str
    factory: Callable[..., Agent]              # (context, seed, **options) -> Agent
    options: tuple[Option, ...] = ()
    privileged: bool = False                   # gets `privileged=` the ground truth
    source: str | None = None                  # from outside: its module:factory (and distribution)
    observations: tuple[str, ...] | None = None   # the observation modes it reads (None: any)

    def check_observation(self, observation: str) -> None:
        """An AgentError, before anything starts, if it cannot read observations of that mode."""
        if self.observations is not None and observation not in self.observations:
            raise AgentError(f"the {self.name} agent reads the screenshot: run it with an observation mode "
                             f"that gives one ({', '.join(self.observations)}), not {observation!r}")


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


def _family_names() -> tuple[str, ...]:
    from clinigym.agents.families import FAMILIES
    return tuple(FAMILIES)


def _format_names() -> tuple[str, ...]:
    from clinigym.agents.cua.formats import FORMATS  # loads every format's parser
    return tuple(FORMATS)


# The model-server agents send the tree text without a screenshot too (`families.observed`).
SCREENSHOT_OR_TREE = ("screenshot", "a11y", "screenshot+a11y", "som")
MAX_TOKENS = {"http": 512, "cua": 1024}   # the agents' own defaults (a click; a turn of several calls)


def _server_options(agent: str) -> tuple[Option, ...]:
    """The options of the agents that talk to an OpenAI-compatible server: shared flags
    (one type and one help each), each agent its own default."""
    return (Option("--base-url", "base_url", "http, cua agents: API base URL", "http://127.0.0.1:8000/v1"),
            Option("--model", "model", "http, cua agents: model name on the server", "default"),
            Option("--timeout", "timeout", "http, cua agents: seconds per request", 120.0, float),
            Option("--temperature", "temperature", "http, cua agents: sampling temperature of chat-completions "
                                                   "requests (default 0.0)", 0.0, request.temperature),
            Option("--max-tokens", "max_tokens", "http, cua agents: tokens per answer of chat-completions "
                                                 f"requests (default {MAX_TOKENS['http']} for http, "
                                                 f"{MAX_TOKENS['cua']} for cua)",
                   MAX_TOKENS[agent], request.max_tokens),
            Option("--api-key-env", "api_key_env", "http, cua agents: the NAME of the environment variable that "
                                                   f"holds the API key (default {request.DEFAULT_KEY_ENV}, when "
                                                   "set); never the key itself", None, request.key_env),
            Option("--extra-body", "extra_body", "http, cua agents: a JSON object of extra request fields, merged "
                                                 "into every request body (e.g. '{\"top_k\": 5}')",
                   None, request.extra_body))


AGENTS: dict[str, AgentEntry] = {e.name: e for e in (
    AgentEntry("oracle", "the scenario's ground truth: centre of each live target (privileged)", _oracle,
               privileged=True),
    AgentEntry("random", "uniform random clicks (chance baseline)", _random),
    AgentEntry("ocr", "offline OCR grounding: instruction words matched to on-screen text, icon templates "
                      "(extra `ocr`); in the plan mode it works down the step list", _ocr,
               observations=SCREENSHOT),
    AgentEntry("http", "a GUI-grounding model behind an OpenAI-compatible API (--model-family, --base-url)", _http,
               (Option("--model-family", "family", "http agent: the model family (see `clinigym agents`)",
                       "ui-tars-1.5", choices=_family_names),
                *_server_options("http")), observations=SCREENSHOT_OR_TREE),
    AgentEntry("cua", "a computer-use model behind an OpenAI-compatible API that acts freely and ends the "
                      "episode itself (plan and goal modes), in its own format (--cua-format)", _cua,
               (Option("--cua-format", "format", "cua agent: the model's format: ui-tars-1.5, qwen2.5-vl, qwen3-vl, "
                                                 "openai-computer-use or json", "qwen3-vl", choices=_format_names),
                *_server_options("cua"),
                Option("--cua-images", "images", "cua agent: screenshots per request, the current one included "
                                                 "(earlier turns stay as text)", 3, int)),
               observations=SCREENSHOT_OR_TREE),
    AgentEntry("guiactor", "GUI-Actor in-process: a click from its action head's attention over screen "
                           "patches (extra `guiactor`, --checkpoint PATH)", _guiactor,
               (Option("--checkpoint", "checkpoint", "guiactor agent: a local GUI-Actor checkpoint folder"),),
               observations=SCREENSHOT),
)}


def resolve(name: str) -> AgentEntry:
    """The entry of an agent: built-in, `package.module:factory`, or an installed entry
    point's name. An AgentError says what is wrong: an unknown name (with the known ones),
    a module that does not import, a missing attribute, a factory that is not callable."""
    if name in AGENTS:
        return AGENTS[name]
    if plugins.is_spec(name):
        factory = plugins.load_factory(name)
        return AgentEntry(name, plugins.describe(factory), factory, source=name)
    installed = plugins.entry_points(AGENTS)
    if name in installed:
        ep = installed[name]
        factory = plugins.load_entry_point(ep)
        where = plugins.distribution(ep)
        return AgentEntry(name, plugins.describe(factory), factory,
                          source=f"{ep.value} ({where})" if where else ep.value)
    raise AgentError(f"unknown agent {name!r}; known: {', '.join([*AGENTS, *installed])}; "
                     f"or one of your own as package.module:factory")


def all_agents() -> dict[str, AgentEntry]:
    """The built-in agents, then those of the installed entry points (each loaded, so that a
    broken one shows its error here)."""
    return {**AGENTS, **{name: resolve(name) for name in plugins.entry_points(AGENTS)}}


def check_agent(name: str, options: dict[str, Any], observation: str = "screenshot") -> AgentEntry:
    """The entry of agent `name`, checked against the run's observation mode, and for an
    agent from outside, its options checked against its factory's signature: before any
    program starts, not in every episode."""
    entry = resolve(name)
    entry.check_observation(observation)
    if entry.source is not None:
        plugins.check_options(name, entry.factory, options)
    return entry


def make_agent(name: str, context: AgentContext, seed: int | None = None, privileged=None, **options) -> Agent:
    """The agent `name` (built-in, an entry point's, or `package.module:factory`), built
    from the public context. `privileged` (the environment's `clinigym.envs.ground_truth`)
    is given only to a built-in agent whose entry asks for it; never to one from outside."""
    entry = resolve(name)
    entry.check_observation(context.observation)
    if entry.privileged:
        if privileged is None:
            raise ValueError(f"the {name} agent needs the environment's ground truth (privileged=)")
        return entry.factory(context, seed, privileged=privileged, **options)
    if entry.source is None:
        return entry.factory(context, seed, **options)
    plugins.check_options(name, entry.factory, options)
    agent = entry.factory(context, seed, **options)
    if not isinstance(agent, Agent):
        raise AgentError(f"agent {name!r}: its factory returned a {type(agent).__name__}, not an agent "
                         f"(an object with name, reset(seed) and act(observation, info))")
    return agent
