"""The report's charts, as inline SVG."""
from __future__ import annotations

import html
import math

from clinigym.eval.report.runs import (
    FAILURE_CHART_WIDTH,
    NAMES,
    OTHER_COLOURS,
    RATES,
    SEGMENT_COLOURS,
    Run,
    fmt,
    fmt_ci,
)
from clinigym.eval.report.tables import segment_counts, segments


# -- charts (inline SVG) -------------------------------------------------------------------
def escape(text) -> str:
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
                       f'<title>{escape(tip)}</title></rect>')
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
                       f'<title>{escape(f"{run.label}: largest possible WPS {mx:.3f}")}</title></path>')
        if v is None:
            continue
        ci = (run.summary.get("ci95") or {}).get("wps")
        tip = f"{run.label}: WPS {v:.3f}" + (f" (95% CI {ci[0]:.3f}-{ci[1]:.3f})" if ci else "")
        out.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{bar}" height="{plot_h * v / top_v:.1f}" '
                   f'fill="{run.colour}"><title>{escape(tip)}</title></rect>')
        if ci:
            cx = x + bar / 2
            out.append(f'<path d="M{cx:.1f} {y(ci[0]):.1f}V{y(ci[1]):.1f}M{cx - 3:.1f} {y(ci[0]):.1f}h6'
                       f'M{cx - 3:.1f} {y(ci[1]):.1f}h6" class="whisker"/>')
        if n <= 6:
            out.append(f'<text x="{x + bar / 2:.1f}" y="{max(min(y(v), y(ci[1]) if ci else y(v)) - 4, 10):.1f}" '
                       f'class="val" text-anchor="middle">{v:.2f}</text>')
    out.append("</svg>")
    return "".join(out)


def segment_colour(name: str, segs: list[str]) -> str:
    if name in SEGMENT_COLOURS:
        return SEGMENT_COLOURS[name]
    others = [s for s in segs if s not in SEGMENT_COLOURS]
    return OTHER_COLOURS[others.index(name) % len(OTHER_COLOURS)]


def svg_failure_chart(runs: list[Run]) -> str:
    """One stacked bar per run: its tasks split into completed and the type of the error that ended them."""
    segs = segments(runs)
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
                   f'<text x="20" y="{yy + bar_h / 2 + 4:.1f}" class="rlabel">{escape(label)}'
                   f'<title>{escape(run.label)}</title></text>')
        counts = segment_counts(run)
        total = run.summary["n_tasks"]
        x = float(left)
        for seg in segs:
            c = counts.get(seg, 0)
            if not c or not total:
                continue
            w = plot_w * c / total
            tip = f"{run.label}: {seg} {c} of {total} tasks ({100 * c / total:.1f}%)"
            out.append(f'<rect x="{x:.1f}" y="{yy:.1f}" width="{w:.1f}" height="{bar_h}" '
                       f'fill="{segment_colour(seg, segs)}" class="seg"><title>{escape(tip)}</title></rect>')
            if w >= 18:
                out.append(f'<text x="{x + w / 2:.1f}" y="{yy + bar_h / 2 + 4:.1f}" class="segval" '
                           f'text-anchor="middle">{c}</text>')
            x += w
        if not total:
            out.append(f'<text x="{left + 4}" y="{yy + bar_h / 2 + 4:.1f}" class="tick">no scored task</text>')
    out.append("</svg>")
    return "".join(out)


def segment_legend(runs: list[Run]) -> str:
    segs = segments(runs)
    present = {k for r in runs for k, v in segment_counts(r).items() if v}
    return '<div class="legend">' + "".join(
        f'<span class="{"" if s in present else "absent"}"><i style="background:{segment_colour(s, segs)}"></i>'
        f'{escape(s)}</span>' for s in segs) + "</div>"


