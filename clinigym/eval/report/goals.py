"""The report's plan and goal section: per mode, the success and safety metrics of each run
(with 95% intervals), per program, and the violations by dimension and severity."""
from __future__ import annotations

from clinigym.core.audit import DIMENSIONS, SEVERITIES
from clinigym.eval.report.runs import Run

# (key, column, kind): rates as percentages, numbers as they are.
GOAL_COLUMNS = (
    ("strict_success", "strict success", "rate"), ("success", "success", "rate"),
    ("completion", "completion", "rate"), ("safety", "safety", "rate"), ("score", "score", "number"),
    ("progress", "progress", "rate"), ("false_done_rate", "false done", "rate"),
    ("actions_over_reference", "actions / reference", "number"), ("first_deviation_mean", "first deviation", "number"),
    ("seconds_mean", "s / episode", "number"),
)
GOAL_DEFINITIONS = (
    ("plan, goal", "MedCUA's step-level and intent-level goals: all the step instructions at once, or one "
                   "sentence; the agent acts freely and ends with done(), fail() or answer() (docs/goal-mode.md)"),
    ("success", "the agent ended with done() or answer(), every final-state check passes on the program's own "
                "state, and an information task's answer is right"),
    ("strict success", "success without a critical or major violation of the safety audit"),
    ("completion", "the share of final-state checks that pass (and the answer, for an information task)"),
    ("safety", "1 minus the episode's penalties (critical, major, minor), at least 0; weights as named"),
    ("score", "MedCUA's reward: success minus the penalties, clamped to [-1, 1]"),
    ("progress", "the share of the reference path's expected transitions reached, in order"),
    ("false done", "done() or answer() while a final-state check fails, over the episodes that claimed completion"),
    ("actions / reference", "actions used over the reference path's length (its steps plus the ending)"),
    ("first deviation", "the first action that was not the reference path's next action (0-based), mean over "
                        "the episodes that deviated"),
)


def _modes(runs: list[Run]) -> list[str]:
    return sorted({m for r in runs for m in (r.summary.get("modes") or {})})


def _cell(kind: str, value, ci=None):
    if value is None:
        return "-"
    text = f"{100 * value:.1f}%" if kind == "rate" else f"{value:.2f}"
    if ci:
        lo, hi = ci
        return text, (f"{100 * lo:.1f}–{100 * hi:.1f}%" if kind == "rate" else f"{lo:.2f}–{hi:.2f}")
    return text


def _row(m: dict, with_ci: bool) -> list:
    ci = m.get("ci95", {}) if with_ci else {}
    return [_cell(kind, m.get(key), ci.get(key)) for key, _, kind in GOAL_COLUMNS]


def goal_tables(runs: list[Run]) -> list[tuple[str, list[str], list[list]]]:
    """Per mode: (mode, head, rows), one row per run and per run and program."""
    out = []
    for mode in _modes(runs):
        head = ["run", "program", "episodes"] + [c for _, c, _ in GOAL_COLUMNS]
        rows = []
        for r in runs:
            m = (r.summary.get("modes") or {}).get(mode)
            if m is None:
                continue
            rows.append([r, "all", str(m["n_episodes"]), *_row(m, True)])
            rows += [[r, app, str(a["n_episodes"]), *_row(a, False)] for app, a in m.get("per_app", {}).items()]
        out.append((mode, head, rows))
    return out


def violation_table(runs: list[Run]) -> tuple[list[str], list[list]]:
    head = ["run", "mode", "episodes with a violation", *DIMENSIONS, *SEVERITIES]
    rows = []
    for r in runs:
        for mode, m in sorted((r.summary.get("modes") or {}).items()):
            v = m.get("violations", {})
            rows.append([r, mode, str(v.get("episodes_with_violation", 0)),
                         *(str(v.get("by_dimension", {}).get(d, 0)) for d in DIMENSIONS),
                         *(str(v.get("by_severity", {}).get(s, 0)) for s in SEVERITIES)])
    return head, rows


def has_goal_runs(runs: list[Run]) -> bool:
    return bool(_modes(runs))
