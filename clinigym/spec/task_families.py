"""Task families as data: `scenarios/<app>/families/<name>.yaml`.

A family file is a scenario file whose text may hold `{{ name }}` templates, plus how each
instance draws its values from its seed:

- `cohort:` generated patients and studies (`clinigym.spec.cohort`): the templates see the
  task's patient as `patient`, its first look-alike as `lookalike`, and every person's
  fields (`patient.name`, `patient.id`, `patient.studies.0.description`, ...);
- `params:` named values, each `{choice: [...]}`, `{range: [low, high]}` (integers, `step`
  optional) or `{study_of: patient}` (one of that person's studies).

`Family.instance(seed)` gives instance `seed`: the values, the cohort and the scenario
they render, validated as any scenario is. The same seed gives the same instance on every
machine (`clinigym.spec.cohort.Draw`).
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, fields, is_dataclass
from functools import cache
from math import prod
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from clinigym.spec import paths
from clinigym.spec.apps import app_names, load_app
from clinigym.spec.cohort import Cohort, CohortSpec, Draw, generate, split_part
from clinigym.spec.files import Spec, SpecError, parse, read_yaml
from clinigym.spec.scenarios import Scenario, load_scenario

TEMPLATE = re.compile(r"\{\{\s*([A-Za-z_][\w.]*)\s*\}\}")
COHORT_NAMES = ("patient", "lookalike", "lookalikes", "others", "people")


class Param(Spec):
    """How one value is drawn from the seed: give exactly one of the kinds."""
    choice: list[Any] | None = Field(None, min_length=1, description="one of these values")
    range: tuple[int, int] | None = Field(None, description="an integer in [low, high]")
    step: int = Field(1, ge=1, description="range: the distance between values")
    study_of: str | None = Field(None, description="one of this person's studies (a cohort name)")

    @model_validator(mode="after")
    def _one_kind(self):
        given = [k for k in ("choice", "range", "study_of") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of choice, range or study_of")
        if self.range is not None and self.range[0] > self.range[1]:
            raise ValueError(f"range: low > high ({self.range[0]} > {self.range[1]})")
        if self.step != 1 and self.range is None:
            raise ValueError("step goes with range")
        if self.study_of is not None and self.study_of not in ("patient", "lookalike"):
            raise ValueError("study_of: patient or lookalike")
        return self

    def values(self, split: str | None = None) -> list[Any]:
        """The values it draws from in a split (`clinigym.spec.cohort.SPLITS`): a part of its
        domain, or all of it when the domain has fewer than 8 values (too few to hold any
        out); [] for a person's study, which depends on the cohort."""
        if self.choice is not None:
            domain = list(self.choice)
        elif self.range is not None:
            domain = list(range(self.range[0], self.range[1] + 1, self.step))
        else:
            return []
        return split_part(domain, split) if len(domain) >= 8 else domain

    def size(self, split: str | None = None) -> int:
        """How many values it can take (a person's study counts as one)."""
        return len(self.values(split)) or 1

    def draw(self, name: str, d: Draw, cohort: Cohort | None, split: str | None = None) -> Any:
        if self.study_of is None:
            return d.pick(f"param/{name}", self.values(split))
        person = getattr(cohort, self.study_of) if cohort else None
        if person is None:
            raise ValueError(f"study_of: {self.study_of} is not in this instance's cohort")
        return d.pick(f"param/{name}", person.studies)


class FamilySpec(Spec):
    """What a family file adds to a scenario file."""
    cohort: CohortSpec | None = None
    params: dict[str, Param] = {}

    def problems(self) -> list[tuple[str, str]]:
        """(field, problem) of what the fields cannot say alone."""
        out = []
        for name, param in self.params.items():
            if name in COHORT_NAMES or not re.fullmatch(r"[A-Za-z_]\w*", name):
                out.append(("params", f"{name!r} is not a free name (taken: {', '.join(COHORT_NAMES)})"))
            elif param.study_of and self.cohort is None:
                out.append((f"params.{name}", "study_of needs a cohort"))
        return out


@dataclass(frozen=True)
class Instance:
    """Instance `seed` of a family: its drawn values and the scenario they render."""
    family: str          # the family's key, app/name
    seed: int
    split: str | None    # the part of the pools and domains it drew from (None: all)
    values: dict[str, Any]
    cohort: Cohort | None
    scenario: Scenario


def _lookup(values: dict[str, Any], dotted: str) -> Any:
    head, *rest = dotted.split(".")
    if head not in values:
        raise KeyError(f"{{{{ {dotted} }}}}: no value {head!r} (known: {', '.join(sorted(values))})")
    value = values[head]
    for part in rest:
        if isinstance(value, (list, tuple)) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        elif is_dataclass(value) and (part in {f.name for f in fields(value)} or hasattr(type(value), part)):
            value = getattr(value, part)
        else:
            raise KeyError(f"{{{{ {dotted} }}}}: {part!r} is not a field of {head}")
    if is_dataclass(value) or isinstance(value, (list, tuple, dict)):
        raise KeyError(f"{{{{ {dotted} }}}} is not a single value: name one of its fields")
    return value


def render(data: Any, values: dict[str, Any], where: str = "") -> Any:
    """`data` (parsed YAML) with every `{{ name }}` of its strings (keys too) replaced by the
    value's text (a field that takes a number reads it from the text, as from the YAML)."""
    if isinstance(data, dict):
        return {render(k, values, where): render(v, values, f"{where}.{k}" if where else str(k))
                for k, v in data.items()}
    if isinstance(data, list):
        return [render(v, values, f"{where}[{i}]") for i, v in enumerate(data)]
    if not isinstance(data, str) or "{{" not in data:
        return data
    try:
        return TEMPLATE.sub(lambda m: str(_lookup(values, m.group(1))), data)
    except KeyError as exc:
        raise ValueError(f"{where}: {exc.args[0]}") from None


class Family:
    """A family file: `instance(seed)` renders instance `seed`; `count()` says how many
    distinct instances there are at least."""

    def __init__(self, path: Path):
        self.path = Path(path).resolve()
        data = read_yaml(self.path)
        self.name = self.path.stem
        self.app = self.path.parent.parent.name
        if data.get("app", self.app) != self.app:
            raise SpecError(self.path, "app", f"is {data.get('app')!r} but the file is under scenarios/{self.app}/")
        if self.app not in app_names():
            raise SpecError(self.path, "app", f"unknown program {self.app!r}; known: {', '.join(app_names())}")
        self.spec = parse(FamilySpec, {k: data.pop(k) for k in ("cohort", "params") if k in data}, self.path)
        if problems := self.spec.problems():
            raise SpecError(self.path, *problems[0])
        if data.pop("id", self.name) != self.name:
            raise SpecError(self.path, "id", f"must equal the file name {self.name!r} (or be left out)")
        self.template = data
        if self.spec.cohort and not self._reads_instance():
            raise SpecError(self.path, "cohort", f"{self.app} loads no generated studies by itself (its program "
                            "file has no `instance:` or `restore_instance:`): open them from ${INSTANCE}, "
                            "e.g. in `args`")
        # Instance 0: what every instance shares (program, steps, kinds of checks); a template
        # that cannot render is the file's error, found at load.
        self.scenario = self.instance(0).scenario

    def _reads_instance(self) -> bool:
        """The program loads the generated studies (`instance:`, `restore_instance:`), or the
        family reads them from ${INSTANCE} (in its `args`)."""
        app = load_app(self.app)
        return app.instance is not None or bool(app.restore_instance) or "${INSTANCE}" in str(self.template)

    @property
    def key(self) -> str:
        return f"{self.app}/{self.name}"

    def mode_gym_id(self, mode: str) -> str:
        return f"clinigym/{self.app}-{self.name}{'' if mode == 'steps' else '-' + mode}-v0"

    def count(self, split: str | None = None) -> int:
        """Distinct instances, at least, in a split (None: all): the task's possible patients
        times every parameter's values (computed from the pools and the domains, not declared)."""
        patients = self.spec.cohort.distinct_patients(split) if self.spec.cohort else 1
        return patients * prod(p.size(split) for p in self.spec.params.values())

    def values(self, seed: int, split: str | None = None) -> tuple[dict[str, Any], Cohort | None]:
        d = Draw(self.key, seed)
        cohort = generate(self.spec.cohort, self.key, seed, split) if self.spec.cohort else None
        values: dict[str, Any] = {}
        if cohort:
            values.update(patient=cohort.patient, lookalike=cohort.lookalike, lookalikes=cohort.lookalikes,
                          others=cohort.others, people=cohort.people)
        for name, param in self.spec.params.items():
            try:
                values[name] = param.draw(name, d, cohort, split)
            except ValueError as exc:
                raise SpecError(self.path, f"params.{name}", f"seed {seed}: {exc}") from None
        return values, cohort

    def instance(self, seed: int, split: str | None = None) -> Instance:
        """Instance `seed`, drawn from the split's part of every pool and domain (None: all)."""
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"a family's seed is an integer >= 0, not {seed!r}")
        values, cohort = self.values(seed, split)
        try:
            data = render(self.template, values)
        except ValueError as exc:
            where, _, problem = str(exc).partition(": ")
            raise SpecError(self.path, where, f"seed {seed}: {problem}") from None
        data.update(id=self.name, app=self.app, path=self.path)
        try:
            scenario = parse(Scenario, data, self.path)
        except SpecError as exc:
            raise SpecError(self.path, exc.field, f"seed {seed}: {exc.problem}") from None
        return Instance(self.key, seed, split, values, cohort, scenario)


@cache
def load_family(path: Path) -> Family:
    return Family(Path(path).resolve())


def family_paths() -> list[Path]:
    """Every family file of the search path; a family named as a scenario of its program is
    an error (they would share a registered id)."""
    found = paths.family_files()
    scenarios = {p.parent.name + "/" + p.stem: p for p in paths.scenario_files()}
    for path in found:
        key = f"{path.parent.parent.name}/{path.stem}"
        if key in scenarios:
            raise SpecError(path, "", f"{key!r} is also a scenario ({scenarios[key]})")
    return found


def all_families() -> list[Family]:
    return [load_family(p) for p in family_paths()]


def select_families(pattern: str) -> list[Family]:
    """Families whose key (`app/name`) or path matches the glob, or of the program named."""
    found = [f for f in all_families() if fnmatch.fnmatch(f.key, pattern) or f.app == pattern
             or fnmatch.fnmatch(str(f.path), pattern)]
    if not found:
        raise SpecError(pattern, "", "no task family matches")
    return found


def is_family_file(path: Path) -> bool:
    return Path(path).parent.name == "families"


def load_task(path: Path) -> Scenario | Family:
    """A scenario file or a family file, by where it is."""
    return load_family(path) if is_family_file(path) else load_scenario(path)
