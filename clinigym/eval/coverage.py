"""Which MedSPOT tasks the scenario library reproduces live, and the shape of a
MedSPOT-format dataset (tasks, steps, action types, target sizes) to set a live
dataset beside MedSPOT's own.

A scenario reproduces MedSPOT task N of a program when its id is `medspot-NN-...`
(the loader checks that its `medspot:` reference says the same); other scenarios
with a `medspot:` reference are analogues on another program. Tasks without a live
scenario are listed, with the reason, in `scenarios/medspot-not-reproduced.yaml`:
`impossible` (no build here has the feature) or `blocked` (the feature is there, but
the task cannot be scored live yet).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from clinigym.core.geometry import Box
from clinigym.core.judge import target_size
from clinigym.spec.files import Spec, parse, read_yaml
from clinigym.spec.medspot import MedspotTask
from clinigym.spec.paths import builtin_root
from clinigym.spec.scenarios import Scenario

# MedSPOT's programs that run here (the others are Windows-only or not packaged).
PROGRAMS = ("Orthanc", "ITKsnap", "DICOMscope", "GingkoCadx")
NOT_REPRODUCED = builtin_root() / "scenarios" / "medspot-not-reproduced.yaml"
STATUSES = ("reproduced", "adapted", "impossible", "blocked", "missing")


class NotReproduced(Spec):
    software: str
    task: int = Field(ge=0)
    status: Literal["impossible", "blocked"] = "impossible"
    reason: str = Field(min_length=1, description="what was looked for or tried, where, and why it failed")


class NotReproducedList(Spec):
    tasks: list[NotReproduced]


def load_not_reproduced(path: Path = NOT_REPRODUCED) -> list[NotReproduced]:
    return parse(NotReproducedList, read_yaml(path), path).tasks


@dataclass(frozen=True)
class TaskCoverage:
    software: str
    task: int
    overview: str
    status: str                 # one of STATUSES
    scenarios: tuple[str, ...]  # app/id of the live scenarios
    note: str                   # the adaptation, or why it is impossible


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]


def coverage(tasks: list[MedspotTask], scenarios: list[Scenario],
             not_reproduced: list[NotReproduced]) -> list[TaskCoverage]:
    """One row per MedSPOT task of PROGRAMS, in file and index order."""
    live: dict[tuple[str, int], list[Scenario]] = {}
    for s in scenarios:
        if s.medspot and s.id.startswith("medspot-"):
            live.setdefault((s.medspot.software, s.medspot.task), []).append(s)
    listed = {(n.software, n.task): n for n in not_reproduced}
    rows = []
    for t in sorted((t for t in tasks if t.software in PROGRAMS), key=lambda t: (PROGRAMS.index(t.software), t.index)):
        found = sorted(live.get((t.software, t.index), []), key=lambda s: s.key)
        if found:
            notes = [_first_sentence(s.adaptation) for s in found if s.adaptation]
            status, note = ("adapted", " ".join(notes)) if notes else ("reproduced", "")
        elif (t.software, t.index) in listed:
            entry = listed[(t.software, t.index)]
            status, note = entry.status, _first_sentence(entry.reason)
        else:
            status, note = "missing", ""
        rows.append(TaskCoverage(t.software, t.index, t.overview, status, tuple(s.key for s in found), note))
    return rows


def totals(rows: list[TaskCoverage]) -> dict[str, dict[str, int]]:
    """Per program and overall: tasks and the count of each status."""
    out: dict[str, dict[str, int]] = {}
    for key in (*PROGRAMS, "all"):
        group = [r for r in rows if key in ("all", r.software)]
        counts = Counter(r.status for r in group)
        out[key] = {"tasks": len(group), **{s: counts.get(s, 0) for s in STATUSES}}
    return out


def to_json(rows: list[TaskCoverage]) -> dict:
    return {"tasks": [asdict(r) for r in rows], "totals": totals(rows)}


def markdown(rows: list[TaskCoverage]) -> str:
    lines = ["| MedSPOT task | Overview | Live scenario | Status | Adaptation or reason |",
             "|---|---|---|---|---|"]
    for r in rows:
        cells = [f"{r.software} {r.task}", r.overview, "<br>".join(f"`{k}`" for k in r.scenarios) or "-",
                 r.status, r.note or "-"]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    t = totals(rows)
    lines.append("")
    lines.append("| Program | Tasks | Reproduced | Adapted | Impossible | Blocked | Missing |")
    lines.append("|---|---|---|---|---|---|---|")
    for key, c in t.items():
        lines.append(f"| {key} | {c['tasks']} | " + " | ".join(str(c[s]) for s in STATUSES) + " |")
    return "\n".join(lines)


# -- the shape of a dataset -----------------------------------------------------------------
def shape(tasks: list[MedspotTask]) -> dict:
    """Tasks, steps, action types and target sizes (MedSPOT's area thresholds) of a dataset."""
    steps = [s for t in tasks for s in t.steps]
    actions = [a for s in steps for a in s.actions]
    # Percent boxes on a 100 x 100 canvas: the area fraction does not depend on the image size.
    sizes = Counter(target_size(Box.from_percent(*a.bbox, 100, 100), 100, 100) for s in steps
                    for a in s.actions[:1])
    return {"tasks": len(tasks), "steps": len(steps), "scorable_steps": sum(s.scorable for s in steps),
            "steps_per_task": round(len(steps) / len(tasks), 2) if tasks else 0.0,
            "action_types": dict(sorted(Counter(a.type for a in actions).items())),
            "target_sizes": {k: sizes.get(k, 0) for k in ("small", "medium", "large")}}


def shape_table(named: dict[str, dict]) -> str:
    """Datasets side by side, one row each."""
    head = "| Dataset | Tasks | Steps | Steps/task | Small | Medium | Large | Action types |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for name, s in named.items():
        n = sum(s["target_sizes"].values()) or 1
        pct = {k: f"{v} ({100 * v / n:.0f}%)" for k, v in s["target_sizes"].items()}
        types = ", ".join(f"{k} {v}" for k, v in s["action_types"].items())
        lines.append(f"| {name} | {s['tasks']} | {s['steps']} | {s['steps_per_task']} | {pct['small']} | "
                     f"{pct['medium']} | {pct['large']} | {types} |")
    return "\n".join(lines)
