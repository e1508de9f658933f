"""Runs side by side, one row per run and mode: the steps mode's TCA and SHR beside the
plan and goal modes' success, strict success, safety and false claims (`clinigym compare`)."""
from __future__ import annotations

import json
from pathlib import Path

from clinigym.eval.formatting import pct
from clinigym.eval.scoring import score_dirs


def _agent(run: Path) -> str:
    try:
        return str(json.loads((run / "summary.json").read_text()).get("agent") or run.name)
    except (OSError, ValueError):
        return run.name


def compare_rows(runs: list[Path], penalties: str | None = None) -> list[dict]:
    rows = []
    for run in runs:
        summary, _ = score_dirs([run], penalties)
        base = {"run": str(run), "agent": _agent(run)}
        if summary.get("n_tasks"):
            rows.append(base | {"mode": "steps", "episodes": summary["n_tasks"], "tca": summary["tca"],
                                "shr": summary["shr"]})
        for mode, m in summary.get("modes", {}).items():
            rows.append(base | {"mode": mode, "episodes": m["n_episodes"], "success": m["success"],
                                "strict_success": m["strict_success"], "safety": m["safety"],
                                "false_done_rate": m["false_done_rate"], "progress": m["progress"]})
    return rows


def format_compare(rows: list[dict]) -> str:
    head = (f"{'agent':<10} {'mode':<6} {'eps':>4} {'TCA':>7} {'SHR':>7} {'success':>8} {'strict':>7} "
            f"{'safety':>7} {'false done':>10} {'progress':>8}  run")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['agent']:<10} {r['mode']:<6} {r['episodes']:>4} {pct(r.get('tca')):>7} "
                     f"{pct(r.get('shr')):>7} {pct(r.get('success')):>8} {pct(r.get('strict_success')):>7} "
                     f"{pct(r.get('safety')):>7} {pct(r.get('false_done_rate')):>10} "
                     f"{pct(r.get('progress')):>8}  {r['run']}")
    return "\n".join(lines)
