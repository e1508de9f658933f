"""`clinigym report RUN_DIR... --out DIR`: compare recorded runs on one page.

Each RUN_DIR (a run folder with `episodes/`, or one episode folder) is one
column, labelled by the agent recorded in its episodes and the folder name,
and scored with `clinigym.scoring.score_dirs`. The report folder gets:

    report.html   self-contained: inline CSS, charts as inline SVG, no script,
                  nothing fetched from the network
    report.json   the numbers: every run's summary exactly as score_dirs gives it,
                  plus the gallery's step records
    report.md     the same numbers as Markdown tables
    images/       the gallery: each recorded step's observation, downscaled, with
                  the target box and the predicted point drawn in the colour of
                  the step's outcome (green correct, red wrong, grey no prediction)
"""
from __future__ import annotations

import argparse
import html
import json
import math
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageDraw

import clinigym
from clinigym.judge import FAILURE_TYPES
from clinigym.recording import Episode, episode_folders, read_episode
from clinigym.scoring import DECAY, METRICS, TaskResult, score_dirs

GALLERY_LIMIT = 200          # steps shown per run
THUMB_WIDTH = 480            # gallery images are downscaled to at most this width
JPEG_QUALITY = 82
ZOOM_BELOW = 40              # a target smaller than this (thumbnail pixels) gets a zoomed strip too
ZOOM_MAX = 2.5               # largest magnification of the strip over the observation
FAILURE_CHART_WIDTH = 496    # pixels
REPORT_FORMAT = 1

NAMES = {"tca": "TCA", "s1a": "S1A", "shr": "SHR", "shr_attempted": "SHR_attempted", "wps": "WPS",
         "wps_norm": "WPS_norm", "single_step_accuracy": "single-step acc.", "tca_recovery": "TCA (recovery)"}
RATES = ("tca", "s1a", "shr", "shr_attempted", "wps_norm")          # fractions, shown as percentages
EXTRA = ("single_step_accuracy", "tca_recovery")                    # shown when a run has them
LIVE_OUTCOMES = ("wrong_action_type", "no_transition", "app_crashed", "timeout")
OUTCOME_COLOURS = {"correct": "#1a9850", "wrong": "#d73027", "no_prediction": "#8c8c8c"}
RUN_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
               "#ff9da7", "#9c755f", "#bab0ac")
SEGMENT_COLOURS = {
    "completed": "#7fbf7b",
    "no_prediction": "#969696", "small_target": "#fdae61", "near_miss": "#f46d43",
    "edge_bias": "#d53e4f", "toolbar_confusion": "#9e0142", "far_miss": "#5e3c99",
    "wrong_action_type": "#3288bd", "no_transition": "#66c2a5", "app_crashed": "#252525",
    "timeout": "#bf812d",
}
OTHER_COLOURS = ("#e6ab02", "#a6761d", "#1b9e77", "#7570b3", "#e7298a", "#666666")


class ReportError(ValueError):
    """A run folder that cannot be reported (missing, or without recorded episodes)."""


@dataclass
class Run:
    path: Path
    name: str
    agent: str
    summary: dict
    results: list[TaskResult]
    episodes: list[Episode]
    label: str = ""
    colour: str = RUN_COLOURS[0]
    gallery: list[dict] = field(default_factory=list)

    @property
    def n_steps_recorded(self) -> int:
        return sum(len(ep.steps) for ep in self.episodes)

    @property
    def wps_max(self) -> float | None:
        """The largest WPS these tasks allow: the mean over tasks of 1 + 0.8 + ... + 0.8^(n-1)."""
        ns = [r.n_steps for r in self.results if r.n_steps > 0]
        return sum((1 - DECAY ** n) / (1 - DECAY) for n in ns) / len(ns) if ns else None


@dataclass(frozen=True)
class RunDetails:
    """A table cell: the run's label, with its agent, folder and backend below in HTML."""
    run: Run


# -- loading -------------------------------------------------------------------------------
def _run_name(path: Path) -> str:
    path = path.resolve()
    return path.parent.name if path.name == "episodes" else path.name


def load_run(run_dir: Path) -> Run:
    path = Path(run_dir)
    if not path.is_dir():
        raise ReportError(f"{path}: no such folder")
    folders = episode_folders(path)
    if not folders:
        raise ReportError(f"{path}: no recorded episodes (no episode.json under it); "
                          f"give a run folder (with episodes/) or an episode folder")
    try:
        episodes = [read_episode(f) for f in folders]
        summary, results = score_dirs([path])
    except (OSError, ValueError, KeyError) as exc:
        raise ReportError(f"{path}: cannot read its episodes: {exc.__class__.__name__}: {exc}") from None
    agents = list(dict.fromkeys(str(ep.header.get("agent") or "") for ep in episodes if ep.header.get("agent")))
    if not agents and (path / "summary.json").exists():
        try:
            agents = [str(json.loads((path / "summary.json").read_text()).get("agent") or "")]
        except (OSError, ValueError):
            pass
    agent = "+".join(a for a in agents if a) or "unknown"
    return Run(path, _run_name(path), agent, summary, results, episodes)


def _label_runs(runs: list[Run]) -> None:
    seen: dict[str, int] = {}
    for i, run in enumerate(runs):
        label = f"{run.agent} ({run.name})" if run.name and run.name != run.agent else run.agent
        seen[label] = seen.get(label, 0) + 1
        run.label = label if seen[label] == 1 else f"{label} #{seen[label]}"
        run.colour = RUN_COLOURS[i % len(RUN_COLOURS)]


# -- formatting ----------------------------------------------------------------------------
def fmt(metric: str, value) -> str:
    """Rates as percentages, WPS as a plain number, missing values as '-'."""
    if value is None:
        return "-"
    if metric == "wps":
        return f"{value:.3f}"
    return f"{100 * value:.1f}%"


def fmt_ci(metric: str, ci: dict | None, dash: str = "-") -> str:
    if not ci or metric not in ci:
        return ""
    lo, hi = ci[metric]
    if metric == "wps":
        return f"{lo:.3f}{dash}{hi:.3f}"
    return f"{100 * lo:.1f}{dash}{100 * hi:.1f}%"


def _failure_text(m: dict) -> str:
    fails = dict(m.get("failures") or {}, **(m.get("live_outcomes") or {}))
    return ", ".join(f"{k}={v}" for k, v in fails.items()) or "-"


def _outcome(rec: dict) -> str:
    if rec.get("correct"):
        return "correct"
    return "no_prediction" if rec.get("action") is None else "wrong"


def _action_text(action: dict | None) -> str:
    if not action:
        return "no prediction"
    parts = []
    for key in ("point", "end_point"):
        if action.get(key) is not None:
            parts.append(f"{action[key][0]:.0f}, {action[key][1]:.0f}")
    for key in ("text", "keys"):
        if action.get(key) is not None:
            parts.append(repr(action[key]))
    if action.get("scroll"):
        parts.append("scroll " + ", ".join(str(v) for v in action["scroll"]))
    return f"{action.get('type', '?')}({'; '.join(parts)})"


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


def _segments(runs: list[Run]) -> list[str]:
    live = sorted({k for r in runs for k in (r.summary.get("live_outcomes") or {})},
                  key=lambda k: (LIVE_OUTCOMES.index(k) if k in LIVE_OUTCOMES else len(LIVE_OUTCOMES), k))
    return ["completed", *FAILURE_TYPES, *live]


def _segment_counts(run: Run) -> dict[str, int]:
    s = run.summary
    counts = dict(s.get("failures") or {}, **(s.get("live_outcomes") or {}))
    counts["completed"] = s["n_tasks"] - sum(counts.values())
    return counts


def failure_table(runs: list[Run]) -> tuple[list[str], list[list]]:
    segs = _segments(runs)
    head = ["run", "tasks"] + segs
    rows = [[r, str(r.summary["n_tasks"])] + [str(_segment_counts(r).get(k, 0)) for k in segs] for r in runs]
    return head, rows


def breakdown_table(runs: list[Run], key: str, title: str) -> tuple[list[str], list[list]]:
    head = [title, "run", "tasks"] + [NAMES[k] for k in METRICS] + ["failures"]
    groups = sorted({g for r in runs for g in (r.summary.get(key) or {})})
    rows = []
    for g in groups:
        for r in runs:
            m = (r.summary.get(key) or {}).get(g)
            if m is not None:
                rows.append([g, r, str(m["n_tasks"])] + _metric_cells(m) + [_failure_text(m)])
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
        backends = ", ".join(sorted({str(ep.header.get("backend", "?")) for ep in r.episodes}))
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


# -- charts (inline SVG) -------------------------------------------------------------------
def _e(text) -> str:
    return html.escape(str(text), quote=True)


def svg_metric_chart(runs: list[Run]) -> str:
    """Grouped bars: one group per rate metric, one bar per run, 95% CI whiskers."""
    n = len(runs)
    bar, gap, group_gap = max(8, min(22, 100 // n)), 3, 18
    group_w = max(n * bar + (n - 1) * gap, 74)   # room for the metric's name under the group
    left, top, plot_h, bottom = 46, 18, 170, 34
    width = left + len(RATES) * (group_w + group_gap) + 10
    height = top + plot_h + bottom

    def y(v: float) -> float:
        return top + plot_h * (1 - v)
    out = [(f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
           f'role="img" aria-label="Metrics per run">')]
    for t in (0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<line x1="{left}" x2="{width - 6}" y1="{y(t):.1f}" y2="{y(t):.1f}" class="grid"/>'
                   f'<text x="{left - 6}" y="{y(t) + 4:.1f}" class="tick" text-anchor="end">{t * 100:.0f}%</text>')
    for gi, key in enumerate(RATES):
        gx = left + group_gap / 2 + gi * (group_w + group_gap)
        bars_x = gx + (group_w - (n * bar + (n - 1) * gap)) / 2
        out.append(f'<text x="{gx + group_w / 2:.1f}" y="{top + plot_h + 18}" class="glabel" '
                   f'text-anchor="middle">{NAMES[key]}</text>')
        for ri, run in enumerate(runs):
            v = run.summary.get(key)
            x = bars_x + ri * (bar + gap)
            if v is None:
                out.append(f'<text x="{x + bar / 2:.1f}" y="{y(0) - 4:.1f}" class="val" '
                           f'text-anchor="middle">n/a</text>')
                continue
            ci = (run.summary.get("ci95") or {}).get(key)
            tip = f"{run.label}: {NAMES[key]} {fmt(key, v)}" + (f" (95% CI {fmt_ci(key, run.summary['ci95'])})"
                                                               if ci else "")
            h = max(plot_h * v, 0.0)
            out.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{bar}" height="{h:.1f}" fill="{run.colour}">'
                       f'<title>{_e(tip)}</title></rect>')
            if ci:
                cx = x + bar / 2
                lo, hi = y(ci[0]), y(ci[1])
                out.append(f'<path d="M{cx:.1f} {lo:.1f}V{hi:.1f}M{cx - 3:.1f} {lo:.1f}h6M{cx - 3:.1f} {hi:.1f}h6" '
                           f'class="whisker"/>')
            if n <= 4:
                ty = min(y(v), y(ci[1]) if ci else y(v)) - 4
                out.append(f'<text x="{x + bar / 2:.1f}" y="{max(ty, 10):.1f}" class="val" '
                           f'text-anchor="middle">{100 * v:.0f}</text>')
    out.append("</svg>")
    return "".join(out)


def _nice_axis(v: float) -> tuple[float, float]:
    """(top, tick step) of an axis from 0 that holds v, with at most 5 ticks."""
    for step in (0.25, 0.5, 1, 2, 5, 10, 20, 50):
        k = max(1, math.ceil(v / step - 1e-9))
        if k <= 5:
            return k * step, step
    return v, v / 4


def svg_wps_chart(runs: list[Run]) -> str:
    """WPS per run (absolute), with its 95% CI and the largest value these tasks allow."""
    n = len(runs)
    bar, gap = max(14, min(40, 240 // n)), 14
    left, top, plot_h, bottom = 46, 18, 170, 34
    width = left + n * (bar + gap) + gap + 10
    height = top + plot_h + bottom
    hi_all = max([r.wps_max or 0 for r in runs] + [(r.summary.get("wps") or 0) for r in runs]
                 + [((r.summary.get("ci95") or {}).get("wps") or [0, 0])[1] for r in runs] + [1.0])
    top_v, step = _nice_axis(hi_all)

    def y(v: float) -> float:
        return top + plot_h * (1 - v / top_v)
    out = [(f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
           f'role="img" aria-label="WPS per run">')]
    for i in range(round(top_v / step) + 1):
        t = i * step
        out.append(f'<line x1="{left}" x2="{width - 6}" y1="{y(t):.1f}" y2="{y(t):.1f}" class="grid"/>'
                   f'<text x="{left - 6}" y="{y(t) + 4:.1f}" class="tick" text-anchor="end">{t:g}</text>')
    out.append(f'<text x="{left + (width - left) / 2:.1f}" y="{top + plot_h + 18}" class="glabel" '
               f'text-anchor="middle">WPS</text>')
    for ri, run in enumerate(runs):
        x = left + gap + ri * (bar + gap)
        v = run.summary.get("wps")
        mx = run.wps_max
        if mx is not None:
            out.append(f'<path d="M{x - 3:.1f} {y(mx):.1f}h{bar + 6}" class="maxline">'
                       f'<title>{_e(f"{run.label}: largest possible WPS {mx:.3f}")}</title></path>')
        if v is None:
            continue
        ci = (run.summary.get("ci95") or {}).get("wps")
        tip = f"{run.label}: WPS {v:.3f}" + (f" (95% CI {ci[0]:.3f}-{ci[1]:.3f})" if ci else "")
        out.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{bar}" height="{plot_h * v / top_v:.1f}" '
                   f'fill="{run.colour}"><title>{_e(tip)}</title></rect>')
        if ci:
            cx = x + bar / 2
            out.append(f'<path d="M{cx:.1f} {y(ci[0]):.1f}V{y(ci[1]):.1f}M{cx - 3:.1f} {y(ci[0]):.1f}h6'
                       f'M{cx - 3:.1f} {y(ci[1]):.1f}h6" class="whisker"/>')
        if n <= 6:
            out.append(f'<text x="{x + bar / 2:.1f}" y="{max(min(y(v), y(ci[1]) if ci else y(v)) - 4, 10):.1f}" '
                       f'class="val" text-anchor="middle">{v:.2f}</text>')
    out.append("</svg>")
    return "".join(out)


def _segment_colour(name: str, segs: list[str]) -> str:
    if name in SEGMENT_COLOURS:
        return SEGMENT_COLOURS[name]
    others = [s for s in segs if s not in SEGMENT_COLOURS]
    return OTHER_COLOURS[others.index(name) % len(OTHER_COLOURS)]


def svg_failure_chart(runs: list[Run]) -> str:
    """One stacked bar per run: its tasks split into completed and the type of the error that ended them."""
    segs = _segments(runs)
    left, row_h, bar_h, top = 160, 34, 22, 8
    plot_w = FAILURE_CHART_WIDTH - left - 16
    width = FAILURE_CHART_WIDTH
    height = top + len(runs) * row_h + 22
    out = [(f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
           f'role="img" aria-label="Outcome of every task per run">')]
    for t in (0, 0.25, 0.5, 0.75, 1.0):
        x = left + plot_w * t
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top - 4}" y2="{top + len(runs) * row_h:.1f}" '
                   f'class="grid"/><text x="{x:.1f}" y="{height - 6}" class="tick" '
                   f'text-anchor="middle">{t * 100:.0f}%</text>')
    for ri, run in enumerate(runs):
        yy = top + ri * row_h + (row_h - bar_h) / 2
        label = run.label if len(run.label) <= 20 else run.label[:19] + "…"
        out.append(f'<rect x="4" y="{yy + bar_h / 2 - 5:.1f}" width="10" height="10" fill="{run.colour}"/>'
                   f'<text x="20" y="{yy + bar_h / 2 + 4:.1f}" class="rlabel">{_e(label)}'
                   f'<title>{_e(run.label)}</title></text>')
        counts = _segment_counts(run)
        total = run.summary["n_tasks"]
        x = float(left)
        for seg in segs:
            c = counts.get(seg, 0)
            if not c or not total:
                continue
            w = plot_w * c / total
            tip = f"{run.label}: {seg} {c} of {total} tasks ({100 * c / total:.1f}%)"
            out.append(f'<rect x="{x:.1f}" y="{yy:.1f}" width="{w:.1f}" height="{bar_h}" '
                       f'fill="{_segment_colour(seg, segs)}" class="seg"><title>{_e(tip)}</title></rect>')
            if w >= 18:
                out.append(f'<text x="{x + w / 2:.1f}" y="{yy + bar_h / 2 + 4:.1f}" class="segval" '
                           f'text-anchor="middle">{c}</text>')
            x += w
        if not total:
            out.append(f'<text x="{left + 4}" y="{yy + bar_h / 2 + 4:.1f}" class="tick">no scored task</text>')
    out.append("</svg>")
    return "".join(out)


def _segment_legend(runs: list[Run]) -> str:
    segs = _segments(runs)
    present = {k for r in runs for k, v in _segment_counts(r).items() if v}
    return '<div class="legend">' + "".join(
        f'<span class="{"" if s in present else "absent"}"><i style="background:{_segment_colour(s, segs)}"></i>'
        f'{_e(s)}</span>' for s in segs) + "</div>"


# -- gallery -------------------------------------------------------------------------------
def _overlay(img: Image.Image, rec: dict, s: float, ox: float = 0.0, oy: float = 0.0) -> None:
    """Draws the step's target (and end) box and its predicted point onto `img`, an image of the
    observation region from (ox, oy) scaled by s, in the colour of the step's outcome."""
    colour = OUTCOME_COLOURS[_outcome(rec)]
    draw = ImageDraw.Draw(img)
    for key, line in (("end_box", 1), ("target_box", 2)):
        box = rec.get(key)
        if box and len(box) == 4:
            x1, y1, x2, y2 = (box[0] - ox) * s, (box[1] - oy) * s, (box[2] - ox) * s, (box[3] - oy) * s
            cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
            x1, x2 = min(x1, cx - 3), max(x2, cx + 3)    # at least 6 px, so a tiny target stays visible
            y1, y2 = min(y1, cy - 3), max(y2, cy + 3)
            draw.rectangle([x1 - 1, y1 - 1, x2 + 1, y2 + 1], outline="white", width=line + 2)
            draw.rectangle([x1, y1, x2, y2], outline=colour, width=line)
    action = rec.get("action") or {}
    point, end = action.get("point"), action.get("end_point")
    if point is None:
        return
    px, py = (point[0] - ox) * s, (point[1] - oy) * s
    if end is not None:
        ex, ey = (end[0] - ox) * s, (end[1] - oy) * s
        draw.line([px, py, ex, ey], fill="white", width=4)
        draw.line([px, py, ex, ey], fill=colour, width=2)
        draw.ellipse([ex - 3, ey - 3, ex + 3, ey + 3], fill=colour, outline="white")
    r = 7
    draw.ellipse([px - r - 1, py - r - 1, px + r + 1, py + r + 1], outline="white", width=4)
    draw.ellipse([px - r, py - r, px + r, py + r], outline=colour, width=2)
    for dx, dy in ((1, 0), (0, 1)):
        draw.line([px - dx * (r + 5), py - dy * (r + 5), px - dx * (r - 3), py - dy * (r - 3)], fill=colour, width=2)
        draw.line([px + dx * (r - 3), py + dy * (r - 3), px + dx * (r + 5), py + dy * (r + 5)], fill=colour, width=2)
    draw.ellipse([px - 1.5, py - 1.5, px + 1.5, py + 1.5], fill=colour)


def zoom_region(rec: dict, w: int, h: int, strip_w: int) -> tuple[float, float, float, float] | None:
    """A 3:1 region of the observation around a small target (and the predicted point, when it is
    near), at most ZOOM_MAX times magnified in a strip `strip_w` wide; None without a target."""
    box = rec.get("target_box")
    if not box or len(box) != 4:
        return None
    x1, y1, x2, y2 = box
    point = (rec.get("action") or {}).get("point")
    if point is not None:
        ux1, uy1, ux2, uy2 = min(x1, point[0]), min(y1, point[1]), max(x2, point[0]), max(y2, point[1])
        if ux2 - ux1 <= w / 4 and uy2 - uy1 <= h / 4:
            x1, y1, x2, y2 = ux1, uy1, ux2, uy2
    pad = 30
    rw = max(x2 - x1 + 2 * pad, 3 * (y2 - y1 + 2 * pad), strip_w / ZOOM_MAX)
    rw = min(rw, w, 3 * h)
    rh = rw / 3
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    rx = min(max(cx - rw / 2, 0), w - rw)
    ry = min(max(cy - rh / 2, 0), h - rh)
    return rx, ry, rx + rw, ry + rh


def draw_step(src: Path, dst: Path, rec: dict, width: int = THUMB_WIDTH,
              zoom_dst: Path | None = None) -> tuple[tuple[int, int], tuple[int, int] | None]:
    """The step's observation, downscaled to at most `width`, with its target box and predicted
    point drawn; and, when the target is small on it, a zoomed strip around the target into
    `zoom_dst`. Returns the sizes of both (the second None without a strip)."""
    with Image.open(src) as img:
        full = img.convert("RGB")
    w, h = full.size
    s = min(1.0, width / w)
    thumb = full.resize((max(1, round(w * s)), max(1, round(h * s))), Image.LANCZOS, reducing_gap=2.0) \
        if s < 1.0 else full.copy()
    _overlay(thumb, rec, s)
    dst.parent.mkdir(parents=True, exist_ok=True)
    thumb.save(dst, "JPEG", quality=JPEG_QUALITY, optimize=True)
    zoom_size = None
    box = rec.get("target_box")
    if zoom_dst is not None and s < 1.0 and box and max(box[2] - box[0], box[3] - box[1]) * s < ZOOM_BELOW:
        region = zoom_region(rec, w, h, thumb.width)
        if region is not None:
            x1, y1, x2, y2 = (round(v) for v in region)
            z = thumb.width / (x2 - x1)
            strip = full.crop((x1, y1, x2, y2)).resize((thumb.width, max(1, round((y2 - y1) * z))), Image.LANCZOS)
            _overlay(strip, rec, z, x1, y1)
            strip.save(zoom_dst, "JPEG", quality=JPEG_QUALITY, optimize=True)
            zoom_size = strip.size
    return thumb.size, zoom_size


def build_gallery(run: Run, index: int, out: Path, limit: int, width: int) -> None:
    """Draws up to `limit` steps of the run into out/images (in parallel: decoding the PNG
    observations is most of the time); fills run.gallery with their records."""
    jobs = []
    for ei, ep in enumerate(run.episodes):
        for si, rec in enumerate(ep.steps):
            if len(run.gallery) >= limit:
                break
            entry = {"episode": ep.folder.name, "scenario": ep.header.get("scenario"),
                     "app": ep.header.get("app"), "n_steps": ep.header.get("n_steps"),
                     "step": rec.get("step"), "t": rec.get("t", si), "instruction": rec.get("instruction"),
                     "action": rec.get("action"), "correct": bool(rec.get("correct")),
                     "failure": rec.get("failure"), "outcome": _outcome(rec),
                     "target_box": rec.get("target_box"), "end_box": rec.get("end_box"),
                     "transition_seen": rec.get("transition_seen"), "image": None, "image_size": None}
            run.gallery.append(entry)
            src = ep.folder / rec["before"] if rec.get("before") else None
            if src is not None and src.exists():
                jobs.append((entry, src, f"images/r{index}-e{ei:04d}-s{si:03d}", rec))

    def draw(job):
        entry, src, name, rec = job
        try:
            size, zoom = draw_step(src, out / f"{name}.jpg", rec, width, out / f"{name}-zoom.jpg")
            entry.update(image=f"{name}.jpg", image_size=list(size))
            if zoom:
                entry.update(zoom=f"{name}-zoom.jpg", zoom_size=list(zoom))
        except OSError as exc:  # an unreadable PNG (a run killed mid-write): shown as missing
            entry["image_error"] = str(exc)

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        list(pool.map(draw, jobs))


def _card(entry: dict) -> str:
    outcome = entry["outcome"]
    badge = "correct" if outcome == "correct" else (entry["failure"] or outcome.replace("_", " "))
    step = entry["step"]
    where = f"step {step + 1}/{entry['n_steps']}" if isinstance(step, int) and entry.get("n_steps") else ""
    if entry["image"]:
        w, h = entry["image_size"]
        img = (f'<img src="{_e(entry["image"])}" width="{w}" height="{h}" '
               f'alt="{_e(entry["scenario"])} {where}: {_e(badge)}">')
        if entry.get("zoom"):
            zw, zh = entry["zoom_size"]
            img += (f'<img class="zoom" src="{_e(entry["zoom"])}" width="{zw}" height="{zh}" '
                    f'alt="the target, magnified" title="the target, magnified">')
    else:
        img = '<div class="noimg">observation not recorded</div>'
    extra = []
    if entry.get("transition_seen") is False and entry["correct"] is False and entry["failure"] == "no_transition":
        extra.append("expected transition not seen")
    return (f'<figure class="card {outcome}">{img}<figcaption>'
            f'<span class="badge {outcome}">{_e(badge)}</span> '
            f'<b>{_e(entry["scenario"])}</b> <span class="muted">{_e(where)}</span>'
            f'<div class="instr" title="{_e(entry["instruction"] or "")}">{_e(entry["instruction"] or "")}</div>'
            f'<code>{_e(_action_text(entry["action"]))}</code>'
            + "".join(f' <span class="muted">{_e(x)}</span>' for x in extra)
            + f'<div class="muted small">{_e(entry["episode"])}</div></figcaption></figure>')


def _gallery_html(run: Run, index: int, limit: int) -> str:
    total = run.n_steps_recorded
    shown = len(run.gallery)
    counts = {k: sum(e["outcome"] == k for e in run.gallery) for k in OUTCOME_COLOURS}
    note = f"{shown} recorded steps" if shown == total else \
        f"the first {shown} of {total} recorded steps (at most {limit} per run; see --gallery-limit)"
    cid = f"only-errors-{index}"
    return (f'<details class="gallery" open><summary><span class="sw" style="background:{run.colour}"></span>'
            f'{_e(run.label)} — {_e(note)}: '
            + ", ".join(f'<span class="badge {k}">{v} {k.replace("_", " ")}</span>' for k, v in counts.items() if v)
            + f'</summary><input type="checkbox" id="{cid}" class="filter"><label for="{cid}">only the steps '
              f'that were not correct</label><div class="grid">'
            + "".join(_card(e) for e in run.gallery) + "</div></details>")


# -- page ----------------------------------------------------------------------------------
CSS = """
:root{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#fff;--alt:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 -apple-system,"Segoe UI",Roboto,"DejaVu Sans",Helvetica,Arial,sans-serif;color:var(--fg);
 background:var(--bg);margin:0 auto;padding:20px 28px 40px;max-width:1500px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;padding-bottom:4px;
 border-bottom:1px solid var(--line)}
.muted{color:var(--muted)}.small{font-size:11px}
table{border-collapse:collapse;margin:6px 0 10px;font-variant-numeric:tabular-nums}
th,td{border:1px solid var(--line);padding:4px 9px;text-align:right;vertical-align:top}
th{background:var(--alt);font-weight:600}
td:first-child,th:first-child{text-align:left}
table.breakdown :is(td,th):nth-child(2),table.sizes :is(td,th):nth-child(2){text-align:left}
table.breakdown :is(td,th):last-child{text-align:left}table.breakdown td:last-child{color:var(--muted)}
tbody tr:nth-child(even){background:#fbfcfd}
.ci{font-size:11px;color:var(--muted);white-space:nowrap}
.sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:6px;vertical-align:-1px}
.run{font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:20px 30px;align-items:flex-start}
.charts figure{margin:0}.charts figcaption{font-weight:600;margin-bottom:4px}
.chart{max-width:100%;height:auto;font-family:inherit}
.chart .grid{stroke:#e4e7eb;stroke-width:1}.chart .tick{font-size:11px;fill:var(--muted)}
.chart .glabel{font-size:12px;font-weight:600;fill:var(--fg)}.chart .val{font-size:10px;fill:var(--fg)}
.chart .whisker{stroke:#24292f;stroke-width:1.3;fill:none}
.chart .maxline{stroke:#24292f;stroke-width:1.5;stroke-dasharray:4 3;fill:none}
.chart .rlabel{font-size:12px;fill:var(--fg)}.chart .segval{font-size:11px;fill:#fff;font-weight:600}
.chart .seg{stroke:#fff;stroke-width:1}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin:6px 0}
.legend i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.legend .absent{color:#aab1b9}
.gallery{margin:12px 0}.gallery summary{cursor:pointer;font-weight:600;margin-bottom:6px}
.gallery label{font-size:12px;color:var(--muted);margin-left:4px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:12px;margin-top:8px}
.filter:checked~.grid .card.correct{display:none}
.card{margin:0;border:1px solid var(--line);border-top:4px solid #8c8c8c;border-radius:4px;overflow:hidden;
 background:#fff}
.card.correct{border-top-color:#1a9850}.card.wrong{border-top-color:#d73027}
.card img{display:block;width:100%;height:auto;background:#eee}
.card img.zoom{border-top:1px solid var(--line)}
nav{margin:6px 0 0;font-size:13px}nav a{color:#0969da;text-decoration:none}
.card .noimg{padding:30px 8px;text-align:center;color:var(--muted);background:var(--alt)}
.card figcaption{padding:6px 8px;font-size:12px}
.card .instr{margin:3px 0;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.card code{font-size:11px;background:var(--alt);padding:1px 4px;border-radius:3px}
.badge{display:inline-block;font-size:11px;font-weight:600;padding:0 6px;border-radius:9px;color:#fff;
 background:#8c8c8c}
.badge.correct{background:#1a9850}.badge.wrong{background:#d73027}
dl.defs{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;font-size:12.5px;color:var(--muted)}
dl.defs dt{font-weight:600;color:var(--fg)}dl.defs dd{margin:0}
"""

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


def render_html(runs: list[Run], limit: int, generated: str) -> str:
    e = _e
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
        f'· clinigym {e(clinigym.__version__)} · metrics and failure types of PROTOCOL.md '
        f'(strict first-error scoring)</div>'),
        '<nav>' + " · ".join(f'<a href="#{k}">{v}</a>' for k, v in (
            ("metrics", "metrics"), ("charts", "charts"), ("failures", "failure types"),
            ("per-program", "per program"), ("per-category", "per category"), ("per-size", "per target size"),
            ("gallery", "steps"), ("definitions", "definitions"))) + "</nav>",
        '<h2 id="metrics">Metrics</h2>',
        html_table(*metric_table(runs), cls="metrics"),
        ('<div class="muted small">Rates in percent; WPS as a number. Under each value: its 95% bootstrap '
        'confidence interval (and, for WPS, the largest value these tasks allow).</div>'),
        '<h2 id="charts">Charts</h2>', legend,
        '<div class="charts">',
        f'<figure><figcaption>Rates per run (whiskers: 95% CI)</figcaption>{svg_metric_chart(runs)}</figure>',
        f'<figure><figcaption>WPS (dashed: largest possible)</figcaption>{svg_wps_chart(runs)}</figure>',
        (f'<figure style="max-width:{FAILURE_CHART_WIDTH}px"><figcaption>How each task ended</figcaption>'
         f'{svg_failure_chart(runs)}{_segment_legend(runs)}</figure>'),
        "</div>",
        '<h2 id="failures">Failure types (tasks)</h2>',
        html_table(*failure_table(runs), cls="failures"),
        ('<div class="muted small">The label of the step that ended each task: the six grounding failure types of '
        'PROTOCOL.md, then the live outcomes (not grounding failures of the agent).</div>'),
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
        *(_gallery_html(r, i, limit) for i, r in enumerate(runs)),
        '<h2 id="definitions">Definitions</h2><dl class="defs">',
        *(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in DEFINITIONS),
        "</dl></body></html>",
    ]
    return "\n".join(parts)


def render_markdown(runs: list[Run], generated: str) -> str:
    lines = ["# clinigym report", "", (f"Generated {generated} by clinigym {clinigym.__version__}. "
             "Rates in percent, WPS as a number; 95% bootstrap confidence intervals in parentheses."), "",
             "## Runs", "",
             md_table(["run", "agent", "folder", "episodes", "steps recorded"],
                      [[r, r.agent, str(r.path), str(len(r.episodes)), str(r.n_steps_recorded)] for r in runs]),
             "", "## Metrics", "", md_table(*metric_table(runs)), "",
             "## Failure types (tasks)", "", md_table(*failure_table(runs)), "",
             "## Per program", "", md_table(*breakdown_table(runs, "per_app", "program")), "",
             "## Per task category", "", md_table(*breakdown_table(runs, "per_category", "category")), "",
             "## Step accuracy per target size", "", md_table(*size_table(runs)), "",
             "The per-step gallery is in report.html.", ""]
    return "\n".join(lines)


def report_json(runs: list[Run], limit: int, generated: str) -> dict:
    return {"format": REPORT_FORMAT, "generated": generated, "clinigym": clinigym.__version__,
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
    _label_runs(runs)
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


# -- command line --------------------------------------------------------------------------
def cmd_report(args) -> int:
    try:
        page = build_report([Path(d) for d in args.run_dirs], Path(args.out), args.gallery_limit,
                            args.thumb_width)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(page)
    return 0


def register(subparsers) -> argparse.ArgumentParser:
    """Adds `report` to the `clinigym` subcommands."""
    p = subparsers.add_parser(
        "report", help="an HTML/JSON/Markdown report comparing recorded runs",
        description="Score recorded runs and write report.html (self-contained: inline CSS and SVG, "
                    "no network), report.json, report.md and the per-step gallery images into --out.")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                   help="a run folder (with episodes/) or an episode folder; one column per folder")
    p.add_argument("--out", default="report/", help="report folder (default: report/)")
    p.add_argument("--gallery-limit", type=int, default=GALLERY_LIMIT,
                   help=f"steps shown per run in the gallery (default: {GALLERY_LIMIT})")
    p.add_argument("--thumb-width", type=int, default=THUMB_WIDTH,
                   help=f"largest width of the gallery images in pixels (default: {THUMB_WIDTH})")
    p.set_defaults(func=cmd_report)
    return p
