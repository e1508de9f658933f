"""JSON Schemas of the spec files (program and scenario), generated from their pydantic models.

The committed copies under docs/reference/schemas/ are written by `clinigym schema KIND --json-out
FILE` and a unit test keeps them equal to what this module generates. A schema describes the
file as written, which differs from the model in three ways: fields the loader supplies (the
program's folder, the scenario's path; `exclude=True` in the model) are not in the file; the
scenario's `id` may be left out (the loader takes the file name); and where a `listify`
validator lets one condition stand for a list of one, the schema accepts both.
"""
from __future__ import annotations

import json
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from clinigym.spec.apps import AppSpec
from clinigym.spec.conditions import listify
from clinigym.spec.files import SpecError
from clinigym.spec.scenarios import Scenario

DIALECT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class FileKind:
    model: type[BaseModel]
    title: str
    description: str
    optional: tuple[str, ...] = ()     # required by the model, filled in by the loader when absent


KINDS = {
    "program": FileKind(AppSpec, "clinigym program file",
                        "containers/<program>/app.yaml: a program's packages, pristine state, processes and "
                        "readiness (clinigym.spec.apps.AppSpec)"),
    "scenario": FileKind(Scenario, "clinigym scenario file",
                         "scenarios/<program>/<id>.yaml: one task on one program, its steps and checks "
                         "(clinigym.spec.scenarios.Scenario); `id` defaults to the file name", ("id",)),
}


def _models(model: type[BaseModel]) -> set[type[BaseModel]]:
    """The model and every model its fields hold, at any depth."""
    found: set[type[BaseModel]] = set()

    def visit(tp: Any) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp not in found:
                found.add(tp)
                for field in tp.model_fields.values():
                    visit(field.annotation)
        for arg in typing.get_args(tp):
            visit(arg)
    visit(model)
    return found


def _listified(model: type[BaseModel]) -> list[str]:
    """Fields of the model (itself, not nested) that accept one item for a list of one."""
    validators = model.__pydantic_decorators__.field_validators.values()
    return [f for v in validators if v.info.mode == "before" and v.func is listify for f in v.info.fields]


def _one_or_list(prop: dict) -> dict:
    keep = {k: prop.pop(k) for k in ("title", "description", "default") if k in prop}
    return {**keep, "anyOf": [prop["items"], prop]}


def json_schema(kind: str) -> dict:
    """The JSON Schema (draft 2020-12) of a spec file kind: 'program' or 'scenario'."""
    if kind not in KINDS:
        raise SpecError(kind, "", f"no such file kind; known: {', '.join(KINDS)}")
    spec = KINDS[kind]
    schema = spec.model.model_json_schema()
    defs = schema.get("$defs", {})
    for model in sorted(_models(spec.model), key=lambda m: m.__name__):
        node = schema if model is spec.model else defs[model.__name__]
        for name in _listified(model):
            node["properties"][name] = _one_or_list(node["properties"][name])
    supplied = {name for name, f in spec.model.model_fields.items() if f.exclude} | set(spec.optional)
    for name in supplied - set(spec.optional):
        del schema["properties"][name]
    schema["required"] = [r for r in schema["required"] if r not in supplied]
    schema.pop("title", None)
    return {"$schema": DIALECT, "title": spec.title, "description": spec.description, **schema}


def schema_text(kind: str) -> str:
    """The schema as the committed file holds it."""
    return json.dumps(json_schema(kind), indent=2, ensure_ascii=False) + "\n"
