"""The report's files: report.html (self-contained), report.md and report.json."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

from clinigym._version import __version__
from clinigym.eval.report.charts import escape, segment_legend, svg_failure_chart, svg_metric_chart, svg_wps_chart
from clinigym.eval.report.gallery import build_gallery, gallery_html
from clinigym.eval.report.goals import GOAL_DEFINITIONS, goal_tables, has_goal_runs, violation_table
from clinigym.eval.report.runs import (
    FAILURE_CHART_WIDTH,
    GALLERY_LIMIT,
    REPORT_FORMAT,
    THUMB_WIDTH,
    ReportError,
    Run,
    label_runs,
    load_run,
)
from clinigym.eval.report.tables import breakdown_table, failure_table, html_table, md_table, metric_table, size_table
from clinigym.eval.scoring import DECAY

CSS = (Path(__file__).with_name("report.css")).read_text()

# -- page ----------------------------------------------------------------------------------

DEFINITIONS = (
    ("TCA", "task completion accuracy: tasks whose every step was correct (first-error protocol)"),
    ("S1A", "tasks whose first step was correct"),
    ("SHR", "correct steps over all scored steps"),
    ("SHR_attempted", "correct steps over attempted steps (the correct prefix plus the failing step)"),
    ("WPS", (f"weighted progress: sum of {DECAY}^i over the correct prefix, averaged over tasks "
            f"(at most 1 + {DECAY} = 1.8 for a 2-step task; 'max' is the largest value these tasks allow)")),
    ("WPS_norm", "WPS of each task divided by its largest possible value, averaged over tasks"),
    ("95% CI", "bootstrap over tasks (1000 resamples), shown under each value"),
)


def _goal_html(runs: list[Run]) -> list[str]:
    if not has_goal_runs(runs):
        return []
    parts = ['<h2 id="goals">Plan and goal modes</h2>',
             ('<div class="muted small">Judged after each episode on the program\'s own state (final-state '
              'checks, the answer) and by a safety audit of its records (docs/goal-mode.md). Under each overall '
              'value: its 95% bootstrap confidence interval over episodes.</div>')]
    for mode, head, rows in goal_tables(runs):
        parts += [f"<h3>{escape(mode)} mode</h3>", html_table(head, rows, cls="goals")]
    parts += ["<h3>Safety violations</h3>", html_table(*violation_table(runs), cls="violations")]
    return parts


def _goal_md(runs: list[Run]) -> list[str]:
    if not has_goal_runs(runs):
        return []
    lines = ["## Plan and goal modes", ""]
    for mode, head, rows in goal_tables(runs):
        lines += [f"### {mode} mode", "", md_table(head, rows), ""]
    return lines + ["### Safety violations", "", md_table(*violation_table(runs)), ""]


def render_html(runs: list[Run], limit: int, generated: str) -> str:
    e = escape
    legend = '<div class="legend">' + "".join(
        f'<span><i style="background:{r.colour}"></i>{e(r.label)}</span>' for r in runs) + "</div>"
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',
        f"<title>clinigym report: {e(', '.join(r.label for r in runs))}</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>clinigym report</h1>",
        (f'<div class="muted">{len(runs)} run{"s" if len(runs) != 1 else ""} · generated {e(generated)} '
        f'· clinigym {e(__version__)} · metrics and failure types of MedSPOT\'s protocol '
        f'(strict first-error scoring)</div>'),
        '<nav>' + " · ".join(f'<a href="#{k}">{v}</a>' for k, v in (
            ("metrics", "metrics"), *((("goals", "plan and goal"),) if has_goal_runs(runs) else ()),
            ("charts", "charts"), ("failures", "failure types"),
            ("per-program", "per program"), ("per-category", "per category"), ("per-size", "per target size"),
            ("gallery", "steps"), ("definitions", "definitions"))) + "</nav>",
        '<h2 id="metrics">Metrics</h2>',
        html_table(*metric_table(runs), cls="metrics"),
        ('<div class="muted small">Rates in percent; WPS as a number. Under each value: its 95% bootstrap '
        'confidence interval (and, for WPS, the largest value these tasks allow).</div>'),
        *_goal_html(runs),
        '<h2 id="charts">Charts</h2>', legend,
        '<div class="charts">',
        f'<figure><figcaption>Rates per run (whiskers: 95% CI)</figcaption>{svg_metric_chart(runs)}</figure>',
        f'<figure><figcaption>WPS (dashed: largest possible)</figcaption>{svg_wps_chart(runs)}</figure>',
        (f'<figure style="max-width:{FAILURE_CHART_WIDTH}px"><figcaption>How each task ended</figcaption>'
         f'{svg_failure_chart(runs)}{segment_legend(runs)}</figure>'),
        "</div>",
        '<h2 id="failures">Failure types (tasks)</h2>',
        html_table(*failure_table(runs), cls="failures"),
        ('<div class="muted small">The label of the step that ended each task: the six grounding failure types of '
        'MedSPOT\'s protocol, then the live outcomes (not grounding failures of the agent).</div>'),
        '<h2 id="per-program">Per program</h2>',
        html_table(*breakdown_table(runs, "per_app", "program"), cls="breakdown"),
        '<h2 id="per-category">Per task category</h2>',
        html_table(*breakdown_table(runs, "per_category", "category"), cls="breakdown"),
        '<h2 id="per-size">Step accuracy per target size</h2>',
        html_table(*size_table(runs), cls="sizes"),
        '<h2 id="gallery">Steps</h2>',
        ('<div class="muted">Each recorded step: the observation the agent acted on, the target box and the '
        'predicted point (<span style="color:#1a9850">green</span> correct, '
        '<span style="color:#d73027">red</span> wrong, <span style="color:#8c8c8c">grey</span> no prediction).'
        '</div>'),
        *(gallery_html(r, i, limit) for i, r in enumerate(runs)),
        '<h2 id="definitions">Definitions</h2><dl class="defs">',
        *(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in DEFINITIONS
          + (GOAL_DEFINITIONS if has_goal_runs(runs) else ())),
        "</dl></body></html>",
    ]
    return "\n".join(parts)


def render_markdown(runs: list[Run], generated: str) -> str:
    lines = ["# clinigym report", "", (f"Generated {generated} by clinigym {__version__}. "
             "Rates in percent, WPS as a number; 95% bootstrap confidence intervals in parentheses."), "",
             "## Runs", "",
             md_table(["run", "agent", "folder", "episodes", "steps recorded"],
                      [[r, r.agent, str(r.path), str(len(r.episodes)), str(r.n_steps_recorded)] for r in runs]),
             "", "## Metrics", "", md_table(*metric_table(runs)), "", *_goal_md(runs),
             "## Failure types (tasks)", "", md_table(*failure_table(runs)), "",
             "## Per program", "", md_table(*breakdown_table(runs, "per_app", "program")), "",
             "## Per task category", "", md_table(*breakdown_table(runs, "per_category", "category")), "",
             "## Step accuracy per target size", "", md_table(*size_table(runs)), "",
             "The per-step gallery is in report.html.", ""]
    return "\n".join(lines)


def report_json(runs: list[Run], limit: int, generated: str) -> dict:
    return {"format": REPORT_FORMAT, "generated": generated, "clinigym": __version__,
            "gallery_limit": limit,
            "runs": [{"label": r.label, "agent": r.agent, "name": r.name, "path": str(r.path),
                      "episodes": len(r.episodes), "steps_recorded": r.n_steps_recorded,
                      "wps_max": r.wps_max, "summary": r.summary, "gallery": r.gallery} for r in runs]}


_OWN_IMAGE = re.compile(r"^r\d+-e\d{4}-s\d{3}(-zoom)?\.jpg$")


def build_report(run_dirs: list[Path], out: Path, gallery_limit: int = GALLERY_LIMIT,
                 thumb_width: int = THUMB_WIDTH) -> Path:
    """Writes report.html, report.json, report.md and images/ into `out`; returns report.html's path."""
    if not run_dirs:
        raise ReportError("no run folder given")
    runs = [load_run(Path(d)) for d in run_dirs]
    label_runs(runs)
    out = Path(out)
    images = out / "images"
    images.mkdir(parents=True, exist_ok=True)
    for old in images.iterdir():    # images of an earlier report in the same folder
        if _OWN_IMAGE.match(old.name):
            old.unlink()
    for i, run in enumerate(runs):
        build_gallery(run, i, out, gallery_limit, thumb_width)
    generated = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    (out / "report.json").write_text(json.dumps(report_json(runs, gallery_limit, generated), indent=2))
    (out / "report.md").write_text(render_markdown(runs, generated))
    page = out / "report.html"
    page.write_text(render_html(runs, gallery_limit, generated), encoding="utf-8")
    return page


