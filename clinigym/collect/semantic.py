"""Converting a scenario's pixel boxes into targets by meaning (`clinigym targets`).

The scenario's reference path is run by the oracle with the program's accessibility on;
at each step whose target (or drag end) is a `box`, the tree is read on the screen the step
is judged on, the element that is the target is named (`clinigym.core.naming`), and the
proposal is checked: resolved live, it must hold the box's centre. `rewrite` puts the
checked proposals into the scenario file in place of their `{box: [...]}` lines, comments
and everything else kept. Set-up steps are not converted (their boxes act before the
first observation).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from clinigym.core.geometry import Box
from clinigym.core.naming import Naming, name_target
from clinigym.envs import ground_truth
from clinigym.envs.steps import StepsEnv
from clinigym.spec.conditions import Target
from clinigym.spec.scenarios import Scenario

__all__ = ["Proposed", "propose_targets", "rewrite"]

_BOX_LINE = re.compile(r"^(\s*)(target|end_target): \{box: \[[^\]]*\]\}\s*(#.*)?$")


@dataclass(frozen=True)
class Proposed:
    """One box target of a scenario's step and what is proposed for it."""
    scenario: str
    step: int                 # 0-based index in `steps`
    field: str                # "target" or "end_target"
    box: Box                  # the scenario's box, screen pixels
    naming: Naming
    checked: bool             # resolved live, the proposal holds the box's centre

    def to_json(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "step": self.step + 1, "field": self.field, "box": self.box.as_list(),
                "target": self.naming.target_data(), "checked": self.checked,
                "reason": self.naming.reason or (None if self.checked else "resolved live, it does not hold "
                                                                          "the box's centre")}


def propose_targets(scenario: Scenario, backend: str | None = None) -> list[Proposed]:
    """A proposal for every box target of the scenario's steps, on its live program."""
    env = StepsEnv(scenario, backend=backend)
    env.backend.accessibility = True   # before the first reset: the program starts with its bridge
    out: list[Proposed] = []
    try:
        truth = ground_truth(env)
        env.reset(seed=0)
        for index, step in enumerate(scenario.steps):
            for field in ("target", "end_target"):
                target = getattr(step, field)
                if target is not None and target.box is not None:
                    out.append(_propose(env, scenario, index, field, Box(*target.box)))
            _, _, terminated, truncated, info = env.step(truth.action())
            if (terminated or truncated) and index < len(scenario.steps) - 1:
                raise RuntimeError(f"{scenario.key}: the oracle's episode ended at step {index + 1}: "
                                   f"{info.get('end_reason')}")
    finally:
        env.close()
    return out


def _propose(env: StepsEnv, scenario: Scenario, index: int, field: str, box: Box) -> Proposed:
    # The scenario's own text names its fixtures: a name with a digit is trusted only there.
    naming = name_target(env.backend.elements(), box, scenario.path.read_text())
    checked = False
    data = naming.target_data()
    if data is not None:
        try:
            live = env.backend.resolve(Target.model_validate(data))
        except ValueError:     # named several elements by now: not a target
            live = None
        checked = live is not None and live.contains(*box.center)
    return Proposed(scenario.key, index, field, box, naming, checked)


def flow(data: dict[str, Any]) -> str:
    """A target mapping as one line of flow-style YAML, keys in the order given."""
    return yaml.safe_dump(data, default_flow_style=True, sort_keys=False, width=10**6, allow_unicode=True).strip()


def rewrite(path: Path, proposals: list[Proposed]) -> int:
    """Put the checked proposals into the scenario file in place of their box lines; the
    number of lines replaced."""
    wanted = {(p.step, p.field): p.naming.target_data() for p in proposals if p.checked}
    lines = path.read_text().splitlines(keepends=True)
    section, item, replaced = None, -1, 0
    for n, line in enumerate(lines):
        top = re.match(r"^(\w+):", line)
        if top:
            section, item = top.group(1), -1
            continue
        if section == "steps" and re.match(r"^  - ", line):
            item += 1
        match = _BOX_LINE.match(line)
        key = (item, match.group(2)) if match else None
        if section == "steps" and match and key in wanted:
            comment = f"  {match.group(3)}" if match.group(3) else ""
            lines[n] = f"{match.group(1)}{match.group(2)}: {flow(wanted[key])}{comment}\n"
            replaced += 1
    path.write_text("".join(lines))
    return replaced
