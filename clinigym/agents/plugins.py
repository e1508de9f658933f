"""Agents from outside clinigym, by `module:factory` or by an entry point, so that a lab's
own agent runs through `clinigym run`, its pool of workers and Ray without a fork.

The factory contract (the built-in agents follow it too):

    def factory(context: AgentContext, seed: int | None, **options) -> Agent

`context` holds the public facts of the environment (observation size, program, action
types, mode), `seed` the episode's seed (or None), `options` the agent's own keyword
options (`clinigym run --agent-option KEY=VALUE`, JSON values). It returns an object with
a `name`, `reset(seed)` and `act(observation, info)` (`clinigym.agents.base.Agent`). A
class whose constructor takes these arguments is a factory. An agent from outside is
never privileged: it is never given the environment's ground truth.

Two ways to name one:

- `package.module:factory` (the attribute may be dotted, `module:Class.create`): the module
  is imported in every process that builds the agent (a pool worker, a Ray actor), so it
  must be importable there: installed, or on PYTHONPATH (`PYTHONPATH=. clinigym run
  --agent my_agent:make ...`; on Ray, where the cluster was started).
- an entry point in the group `clinigym.agents` of an installed distribution; its name is
  the agent's name (a built-in name is reserved, and such an entry is skipped with a
  warning):

      [project.entry-points."clinigym.agents"]
      my-agent = "my_lab.agents:make_my_agent"
"""
from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import json
import re
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from clinigym.core.errors import AgentError

GROUP = "clinigym.agents"
_SPEC = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def is_spec(name: str) -> bool:
    """Whether `name` is meant as `module:factory` (a colon: agent names have none)."""
    return ":" in name


def load_factory(spec: str) -> Callable[..., Any]:
    """The callable that `module:attribute` names, or an AgentError that says which part
    is wrong: the form, a module that does not import (with its error), a missing
    attribute, or an attribute that is not callable."""
    if not _SPEC.fullmatch(spec.strip()):
        raise AgentError(f"agent {spec!r}: not of the form package.module:factory")
    module_name, attr = spec.strip().split(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:   # noqa: BLE001 - whatever the module raises on import is the user's to see
        missing = isinstance(exc, ModuleNotFoundError) and f"{module_name}.".startswith(f"{exc.name}.")
        hint = " (is its folder on PYTHONPATH?)" if missing else ""
        raise AgentError(f"agent {spec!r}: module {module_name!r} does not import: "
                         f"{type(exc).__name__}: {exc}{hint}") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AgentError(f"agent {spec!r}: {module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise AgentError(f"agent {spec!r}: {attr} ({type(obj).__name__}) is not callable: a factory is "
                         f"(context, seed, **options) -> Agent")
    return obj


def entry_points(reserved: Mapping[str, object]) -> dict[str, importlib.metadata.EntryPoint]:
    """The installed entry points of the group by name, those with a reserved (built-in)
    name or a colon in their name left out with a warning."""
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for ep in importlib.metadata.entry_points(group=GROUP):
        if ep.name in reserved or is_spec(ep.name):
            warnings.warn(f"entry point {ep.name!r} = {ep.value!r} of {distribution(ep) or 'a distribution'} "
                          f"is ignored: {'a built-in agent has that name' if ep.name in reserved else 'a colon'}",
                          stacklevel=2)
            continue
        found.setdefault(ep.name, ep)
    return found


def load_entry_point(ep: importlib.metadata.EntryPoint) -> Callable[..., Any]:
    """The factory of an entry point, checked as `load_factory` checks a spec."""
    try:
        return load_factory(ep.value)
    except AgentError as exc:
        raise AgentError(f"entry point {ep.name!r} of {distribution(ep) or 'a distribution'}: {exc}") from exc


def distribution(ep: importlib.metadata.EntryPoint) -> str | None:
    """`name version` of the distribution that declares an entry point."""
    dist = ep.dist
    return f"{dist.name} {dist.version}" if dist is not None else None


def describe(factory: Callable[..., Any]) -> str:
    """A factory's description: the first line of its docstring."""
    doc = inspect.getdoc(factory) or ""
    return doc.splitlines()[0] if doc else "(no description: the factory has no docstring)"


def check_options(name: str, factory: Callable[..., Any], options: Mapping[str, Any]) -> None:
    """Refuse options that the factory's signature cannot take (before any program starts)."""
    try:
        params = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return   # no signature to read (a builtin): the call itself will tell
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    takes = [p.name for p in params[2:]   # after the context and the seed
             if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    unknown = sorted(set(options) - set(takes))
    if unknown:
        raise AgentError(f"agent {name!r} takes no option {', '.join(map(repr, unknown))} "
                         f"(its factory's options: {', '.join(takes) or 'none'})")


def parse_option(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` as (key, value): the value as JSON when it is JSON (numbers, true, lists,
    objects, quoted strings), else the text itself."""
    key, sep, raw = text.partition("=")
    if not sep or not key.isidentifier():
        raise ValueError(f"{text!r}: not KEY=VALUE with KEY a Python name")
    try:
        return key, json.loads(raw)
    except ValueError:
        return key, raw
