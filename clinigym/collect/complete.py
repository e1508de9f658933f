"""A demonstrated task made complete: the final-state checks and the safety declaration
derived from what the demonstration and its replay changed in the program's records
(`clinigym.collect.derive`), verified on the live program before they are written.

Verified means: every check holds after the oracle's replay, the replay breaks no rule of
the safety audit under the derived declaration, and the checks do not all hold on the
untouched start (a check that holds from the start tells nothing). A task whose changes did
not reproduce, or whose checks fail these, keeps its steps only, and the reasons are
returned. The scenario then runs in the plan mode, and in the goal mode with a goal
sentence.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from clinigym.collect.derive import derive, parameters
from clinigym.core import audit
from clinigym.spec.conditions import Condition, holds

if TYPE_CHECKING:
    from clinigym.collect.session import CollectSession


def _allowances(safety: dict) -> dict[str, audit.Allowance]:
    return {name: audit.Allowance(**change) for name, change in safety["may_change"].items()}


def _all_hold(check: list[dict], session: CollectSession) -> bool:
    return all(holds(Condition.model_validate(c), session.backend) for c in check)


def _verify(session: CollectSession, check: list[dict], safety: dict) -> list[str]:
    """Why the derived checks and declaration would not judge the task (none: they do). The
    program is in the replayed state on entry, at the start state on return."""
    problems = []
    if not _all_hold(check, session):
        problems.append("a derived check does not hold after the replay")
    violations = audit.audit_records(session.records_before, session.replayed, _allowances(safety),
                                     tuple(safety.get("patients", ())))
    problems += [f"the replay breaks the derived declaration: {v.what}" for v in violations]
    session.reset_start()
    if _all_hold(check, session):
        problems.append("the derived checks already hold on the untouched start")
    return problems


def _ordered(data: dict, check: list[dict], safety: dict) -> dict:
    """The scenario with its declaration after the goal and its checks last, as hand-written
    scenarios read."""
    head = {k: data[k] for k in ("app", "overview", "goal") if k in data}
    rest = {k: v for k, v in data.items() if k not in head}
    return {**head, "safety": safety, **rest, "check": check}


def complete(session: CollectSession, data: dict, demonstrated: audit.Snapshot) -> tuple[dict, dict | None]:
    """Derive and verify the checks and the safety declaration of the scenario `data` (as
    written from the demonstration). Returns what was derived, the values a family could
    draw and the problems, for the page; and the completed scenario, or None when a problem
    stands in the way."""
    file_sets = frozenset(name for name, rs in session.app.records.items() if rs.kind == "files")
    derived = derive(session.records_before, demonstrated, session.replayed, file_sets)
    problems = list(derived.problems)
    if not derived.check and not problems:
        problems.append("the demonstration changed none of the program's records: no check to derive "
                        "(an information task needs its answer written by hand)")
    if not problems:
        problems = _verify(session, derived.check, derived.safety)
    completed = None if problems else _ordered(data, derived.check, derived.safety)
    if not session.goal.strip():
        problems.append("no goal sentence: the goal mode needs one")
    return {"check": derived.check, "safety": derived.safety,
            "parameters": [p.to_json() for p in parameters(data, derived)], "problems": problems}, completed
