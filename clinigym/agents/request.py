"""What a model-server agent (`http`, `cua`) sets in its requests besides the prompt: the
sampling (temperature, max_tokens), the API key, and extra request fields, each checked
where it is given (a CLI flag, a keyword option) with an `OptionError` that says why.

The API key is read from an environment variable, never given as a value, so it is on
no command line and in no recording (run.json keeps the variable's name). Without a
name, OPENAI_API_KEY is used when it is set (no Authorization header otherwise, as for a
local vLLM started without --api-key); a variable named on purpose must be set.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from clinigym.core.errors import AgentError

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
# Fields the agent writes itself: extra fields may not replace them (the conversation, the
# model, the sampling that has its own option; a streamed reply the agent cannot read).
RESERVED = {"model": "--model", "messages": None, "input": None, "tools": None, "previous_response_id": None,
            "temperature": "--temperature", "max_tokens": "--max-tokens", "stream": None}


class OptionError(AgentError, ValueError):
    """An option of a model-server agent that cannot be used: the option and why."""


def extra_body(value: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """Extra request fields: a JSON object (text or mapping), merged into every request
    body; none of RESERVED."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise OptionError(f"extra_body: not JSON: {exc}") from None
    if not isinstance(value, Mapping):
        raise OptionError(f"extra_body: a JSON object ({{\"field\": value, ...}}), not a {type(value).__name__}")
    taken = [k for k in value if k in RESERVED]
    if taken:
        hints = [f"{k} (use {RESERVED[k]})" if RESERVED[k] else k for k in taken]
        raise OptionError(f"extra_body: the agent sets {', '.join(hints)} itself")
    return dict(value)


def key_env(name: str) -> str:
    """The name of a set environment variable that holds the API key (checked, not read)."""
    if not name or "=" in name or "\0" in name:
        raise OptionError(f"api_key_env: {name!r} is not a variable name (give the NAME, not the key)")
    if not os.environ.get(name):
        raise OptionError(f"api_key_env: {name} is not set (or empty) in this environment")
    return name


def api_key(env_name: str | None) -> str | None:
    """The API key: from the named variable (which must be set), else from OPENAI_API_KEY
    when it is set, else none."""
    if env_name is None:
        return os.environ.get(DEFAULT_KEY_ENV) or None
    return os.environ[key_env(env_name)]


def temperature(value: str | float) -> float:
    try:
        t = float(value)
    except ValueError:
        raise OptionError(f"temperature: a number, not {value!r}") from None
    if not t >= 0:   # also refuses NaN
        raise OptionError(f"temperature: at least 0, not {value!r}")
    return t


def max_tokens(value: str | int) -> int:
    try:
        n = int(value)
    except ValueError:
        raise OptionError(f"max_tokens: a whole number, not {value!r}") from None
    if n < 1:
        raise OptionError(f"max_tokens: at least 1, not {value!r}")
    return n
