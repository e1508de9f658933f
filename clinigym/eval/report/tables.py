"""The report's tables, one model rendered as HTML and as Markdown."""
from __future__ import annotations

import html

from clinigym.core.judge import FAILURE_TYPES, LIVE_OUTCOMES
from clinigym.eval.report.runs import EXTRA, NAMES, Run, RunDetails, failure_text, fmt, fmt_ci
from clinigym.eval.scoring import METRICS

# -- tables (one model, rendered as HTML and as Markdown) ------------------------------------
# A cell is a string or a (value, ci) pair; the first cell of a row may be a Run.

def _metric_cells(m: dict) -> list:
    return [fmt(k, m.get(k)) for k in METRICS]


def _extra_metrics(runs: list[Run]) -> list[str]:
    return [k for k in EXTRA if any(k in r.summary for r in runs)]


def metric_table(runs: list[Run]) -> tuple[list[str], list[list]]:
    extra = _extra_metrics(runs)
    head = ["run", "episodes", "tasks"] + [NAMES[k] for k in METRICS] + [NAMES[k] for k in extra]
    rows = []
    for r in runs:
        s = r.summary
        wps_max = r.wps_max
        cells = [(fmt(k, s.get(k)), fmt_ci(k, s.get("ci95"), "–")) for k in METRICS]
        i = METRICS.index("wps")
        if wps_max is not None:
            v, ci = cells[i]
            cells[i] = (v, (ci + " · " if ci else "") + f"max {wps_max:.3f}")
        rows.append([RunDetails(r), str(len(r.episodes)), str(s["n_tasks"]), *cells,
                     *(fmt(k, s.get(k)) for k in extra)])
    return head, rows


def segments(runs: list[Run]) -> list[str]:
    live = sorted({k for r in runs for k in (r.summary.get("live_outcomes") or {})},
                  key=lambda k: (LIVE_OUTCOMES.index(k) if k in LIVE_OUTCOMES else len(LIVE_OUTCOMES), k))
    return ["completed", *FAILURE_TYPES, *live]


def segment_counts(run: Run) -> dict[str, int]:
    s = run.summary
    counts = dict(s.get("failures") or {}, **(s.get("live_outcomes") or {}))
    counts["completed"] = s["n_tasks"] - sum(counts.values())
    return counts


def failure_table(runs: list[Run]) -> tuple[list[str], list[list]]:
    segs = segments(runs)
    head = ["run", "tasks"] + segs
    rows = [[r, str(r.summary["n_tasks"])] + [str(segment_counts(r).get(k, 0)) for k in segs] for r in runs]
    return head, rows


def breakdown_table(runs: list[Run], key: str, title: str) -> tuple[list[str], list[list]]:
    head = [title, "run", "tasks"] + [NAMES[k] for k in METRICS] + ["failures"]
    groups = sorted({g for r in runs for g in (r.summary.get(key) or {})})
    rows = []
    for g in groups:
        for r in runs:
            m = (r.summary.get(key) or {}).get(g)
            if m is not None:
                rows.append([g, r, str(m["n_tasks"])] + _metric_cells(m) + [failure_text(m)])
    return head, rows


def size_table(runs: list[Run]) -> tuple[list[str], list[list]]:
    head = ["target size", "run", "steps", "accuracy"]
    rows = []
    for size in ("small", "medium", "large", "unknown"):
        for r in runs:
            m = (r.summary.get("per_size") or {}).get(size)
            if m:
                rows.append([size, r, str(m["steps"]), fmt("acc", m["accuracy"])])
    return head, rows


def _html_cell(cell) -> str:
    if isinstance(cell, RunDetails):
        r = cell.run
        backends = ", ".join(sorted({ep.header.backend for ep in r.episodes}))
        excluded = len(r.summary.get("excluded_tasks") or ())
        return (_html_cell(r) + f'<div class="ci">{html.escape(r.agent)} · {html.escape(str(r.path))} · '
                f'{r.n_steps_recorded} steps recorded · {html.escape(backends)}'
                + (f' · {excluded} task{"s" if excluded != 1 else ""} without a scored step, excluded'
                   if excluded else "") + '</div>')
    if isinstance(cell, Run):
        return (f'<span class="sw" style="background:{cell.colour}"></span>'
                f'<span class="run">{html.escape(cell.label)}</span>')
    if isinstance(cell, tuple):
        value, ci = cell
        return html.escape(value) + (f'<div class="ci">{html.escape(ci)}</div>' if ci else "")
    return html.escape(str(cell))


def html_table(head: list[str], rows: list[list], cls: str = "") -> str:
    out = [f'<table class="{cls}"><thead><tr>'
           + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{_html_cell(c)}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _md_cell(cell) -> str:
    if isinstance(cell, RunDetails):
        cell = cell.run
    if isinstance(cell, Run):
        text = cell.label
    elif isinstance(cell, tuple):
        text = cell[0] + (f" ({cell[1].replace('–', '-')})" if cell[1] else "")
    else:
        text = str(cell)
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def md_table(head: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


