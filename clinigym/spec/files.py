"""Loading YAML spec files (programs, scenarios) with errors that name the file,
the field and the problem."""
from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from clinigym.core.errors import SpecError

M = TypeVar("M", bound=BaseModel)
__all__ = ["Spec", "SpecError", "load", "parse", "read_yaml"]

# libyaml's loader where PyYAML was built with it: a run reads every scenario file at its
# start, in the coordinator before any worker starts; the C loader takes a quarter of the time.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Spec(BaseModel):
    """Base of every spec model: unknown fields are errors (a typo must not pass)."""
    model_config = ConfigDict(extra="forbid", frozen=True)


def _field(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not str(part).startswith(("function-", "tagged-union", "union[")):
            out += f".{part}" if out else str(part)
    return out


def read_yaml(path: Path) -> dict:
    try:
        data = yaml.load(path.read_text(), Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "syntax"
        raise SpecError(path, where, f"not valid YAML: {getattr(exc, 'problem', exc)}") from None
    except OSError as exc:
        raise SpecError(path, "", f"cannot read: {exc.strerror}") from None
    if not isinstance(data, dict):
        raise SpecError(path, "", f"expected a mapping at the top, found {type(data).__name__}")
    return data


def parse(model: type[M], data: dict, path: Path, **context) -> M:
    try:
        return model.model_validate(data, context={"path": path, **context})
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        raise SpecError(path, _field(err["loc"]), msg) from None


def load(model: type[M], path: Path, **context) -> M:
    return parse(model, read_yaml(path), path, **context)
