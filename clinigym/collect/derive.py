"""What a demonstration changed in the program's records, made into a task's final-state
checks and safety declaration, and the values a family of the task could draw.

Pure rules over three snapshots of the program's records (`clinigym.core.audit.Snapshot`,
read by the audit's own readers): at the start, after the person's demonstration, and after
the oracle's replay of the written steps. Only what both runs did is kept: a record both
deleted, a field both modified to the same value, a created record's fields that came out
the same (an anonymized copy's new identifiers, a download's checksum, do not). What the
runs did differently is a problem, reported, and no check is written from it.

- a deleted record: `{record: {set, key, count: 0}}`;
- a modified record: `{record: {set, key, fields: <changed fields>, count: 1}}`;
- created records: `{record: {set, patient, fields: <fields both runs gave>, count: <how many
  match after the demonstration>}}`;
- `safety.patients`: the patients of every changed record; `safety.may_change`: per set, how
  many records were created, deleted or modified, and the values all of them hold.

Files (sets whose keys are paths on this machine) are named by their file name instead.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from clinigym.core.audit import Item, Snapshot, diff


@dataclass(frozen=True)
class Derived:
    check: list[dict]
    safety: dict
    problems: list[str] = field(default_factory=list)


def _locate(name: str, key: str, item: Item, file_sets: frozenset[str]) -> dict:
    return {"fields": {"name": item.fields["name"]}} if name in file_sets else {"key": key}


def _same_fields(a: Item, b: Item) -> dict[str, str]:
    return {f: v for f, v in a.fields.items() if b.fields.get(f) == v}


def _pair_created(demo: dict[str, Item], replay: dict[str, Item]) -> list[tuple[Item, dict[str, str]]]:
    """Each record the demonstration created, with the fields that the replay's most alike
    record of the same patient gave the same (each replay record paired once)."""
    left = dict(replay)
    pairs = []
    for _, item in sorted(demo.items()):
        same = [(len(_same_fields(item, other)), k) for k, other in left.items() if other.patient == item.patient]
        if not same:
            continue
        _, k = max(same)
        pairs.append((item, _same_fields(item, left.pop(k))))
    return pairs


def _common(values: list[dict[str, str]]) -> dict[str, str]:
    """The values every one of these records holds."""
    if not values:
        return {}
    return {f: v for f, v in values[0].items() if all(other.get(f) == v for other in values[1:])}


def derive(before: Snapshot, demo: Snapshot, replay: Snapshot,
           file_sets: frozenset[str] = frozenset()) -> Derived:
    check: list[dict] = []
    patients: set[str] = set()
    may_change: dict[str, dict] = {}
    problems: list[str] = []
    for name in sorted(before):
        d, r = diff(before[name], demo[name]), diff(before[name], replay[name])
        held: list[dict[str, str]] = []   # per created or modified record: the values it must hold
        if set(d.deleted) != set(r.deleted):
            problems.append(f"{name}: the demonstration deleted {sorted(d.deleted)}, the replay {sorted(r.deleted)}")
        for key, item in sorted(d.deleted.items()):
            check.append({"record": {"set": name, **_locate(name, key, item, file_sets), "count": 0}})
            patients.add(item.patient or "")
        if set(d.modified) != set(r.modified):
            problems.append(f"{name}: the demonstration modified {sorted(d.modified)}, the replay "
                            f"{sorted(r.modified)}")
        for key, (old, new) in sorted(d.modified.items()):
            changed = {f: v for f, v in new.fields.items() if old.fields.get(f) != v}
            again = r.modified.get(key, (old, old))[1]
            kept = {f: v for f, v in changed.items() if again.fields.get(f) == v}
            if not kept:
                problems.append(f"{name} {key}: the replay did not change it as the demonstration did")
                continue
            check.append({"record": {"set": name, **_locate(name, key, old, file_sets), "fields": kept, "count": 1}})
            patients.update(p or "" for p in (old.patient, new.patient))
            held.append(kept)
        pairs = _pair_created(d.created, r.created)
        if len(d.created) != len(r.created) or len(pairs) != len(d.created):
            problems.append(f"{name}: the demonstration created {len(d.created)} record(s), the replay "
                            f"{len(r.created)} (of the same patients: {len(pairs)})")
        wanted: dict[tuple, int] = {}
        for item, kept in pairs:
            shape = (item.patient, tuple(sorted(kept.items())))
            wanted[shape] = sum(1 for it in demo[name].values() if it.patient == item.patient
                                and all(it.fields.get(f) == v for f, v in kept.items()))
            patients.add(item.patient or "")
            held.append(kept)
        for (patient, kept), count in sorted(wanted.items(), key=str):
            check.append({"record": {"set": name, **({"patient": patient} if patient else {}),
                                     **({"fields": dict(kept)} if kept else {}), "count": count}})
        counts = {"created": len(d.created), "deleted": len(d.deleted), "modified": len(d.modified)}
        if any(counts.values()):
            values = _common(held)
            may_change[name] = {k: v for k, v in counts.items() if v} | ({"values": values} if values else {})
    patients.discard("")
    safety = {**({"patients": sorted(patients)} if patients else {}), "may_change": may_change}
    return Derived(check, safety, problems)


@dataclass(frozen=True)
class Parameter:
    """A value of the demonstrated task that a family could draw: where it occurs."""
    value: str
    kind: str
    where: list[str]

    def to_json(self) -> dict:
        return {"value": self.value, "kind": self.kind, "where": self.where}


def _words(name: str) -> list[str]:
    """A patient's name as a person types or reads it: the whole and each part (DICOM's
    `FAMILY^GIVEN`, GNU Health's `FAMILY^GIVEN PUID`)."""
    parts = [p for p in re.split(r"[\^ ]+", name) if len(p) > 1]
    return [name, *parts]


def parameters(scenario: dict, derived: Derived) -> list[Parameter]:
    """The values of the task that a family would draw from its seed: its patients (and the
    parts of their names), the texts typed, and the values its checks require; each with the
    places in the scenario where it occurs (the goal, a step's instruction or typed text, a
    target's text). Only values that occur somewhere are proposed."""
    places = {"goal": scenario.get("goal") or ""}
    for i, step in enumerate(scenario.get("steps", [])):
        places[f"steps[{i}].instruction"] = step.get("instruction", "")
        places[f"steps[{i}].text"] = step.get("text", "")
        places[f"steps[{i}].target.text"] = (step.get("target") or {}).get("text", "")
    candidates: dict[str, str] = {}
    for patient in derived.safety.get("patients", []):
        for word in _words(patient):
            candidates.setdefault(word, "patient")
    for step in scenario.get("steps", []):
        if step.get("text"):
            candidates.setdefault(step["text"], "typed")
    for cond in derived.check:
        for value in cond["record"].get("fields", {}).values():
            if len(value) > 1:
                candidates.setdefault(value, "value")
    out = []
    for value, kind in candidates.items():
        where = [k for k, text in places.items() if value.casefold() in text.casefold()]
        if where:
            out.append(Parameter(value, kind, where))
    return out
