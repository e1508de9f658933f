"""Runs side by side, one row per run and mode: the steps mode's TCA and SHR beside the
plan and goal modes' success, strict success, safety and false claims (`clinigym compare`).

Before the numbers, whether the runs can be compared, from their provenance
(`clinigym.run.provenance`): `comparability` lists the differences that make their numbers
incomparable (a task's scenario file, a program's file or versions: Debian packages, image
id, npm and PyPI pins), which `clinigym compare` refuses without --force, and notes what is
only worth saying (other tasks, another clinigym, another backend, no provenance to tell).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class Comparability:
    differences: list[str] = field(default_factory=list)   # refused without --force
    notes: list[str] = field(default_factory=list)


DEFAULT_SCREEN = (1920, 1080)


def read_provenance(run: Path) -> dict[str, Any] | None:
    """A run folder's provenance: run.json's, else summary.json's; None for a run made before
    clinigym recorded one (or a static-mode run)."""
    for name in ("run.json", "summary.json"):
        try:
            found = json.loads((run / name).read_text()).get("provenance")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(found, dict):
            return found
    return None


def _short(digest: Any) -> str:
    """A digest's first 12 hex digits (a Docker image id's too, after its "sha256:")."""
    return str(digest).removeprefix("sha256:")[:12]


def _program_differences(name: str, a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    out = []
    if a.get("sha256") != b.get("sha256"):
        out.append(f"program {name}: the program files differ (sha256 {_short(a.get('sha256'))} "
                   f"against {_short(b.get('sha256'))})")
    da, db = a.get("debian") or {}, b.get("debian") or {}
    out += [f"program {name}: Debian package {pkg} {da[pkg]} against {db[pkg]}"
            for pkg in sorted(set(da) & set(db)) if da[pkg] != db[pkg]]
    if a.get("image") and b.get("image") and a["image"] != b["image"]:
        out.append(f"program {name}: Docker image {_short(a['image'])} against {_short(b['image'])}")
    for kind in ("npm", "pypi"):
        if a.get(kind) != b.get(kind):
            out.append(f"program {name}: {kind} pins {a.get(kind)} against {b.get(kind)}")
    return out


def comparability(name_a: str, a: dict[str, Any] | None, name_b: str, b: dict[str, Any] | None) -> Comparability:
    """What stands between comparing run `name_a` (provenance `a`) and run `name_b`."""
    missing = [n for n, p in ((name_a, a), (name_b, b)) if p is None]
    if a is None or b is None:
        return Comparability([], [f"{n}: no provenance (a run made before clinigym recorded it, or a static "
                                  f"run): cannot tell whether the scenario and program versions match"
                                  for n in missing])
    differences, notes = [], []
    sa, sb = a.get("scenarios", {}), b.get("scenarios", {})
    only_a, only_b = sorted(set(sa) - set(sb)), sorted(set(sb) - set(sa))
    if only_a or only_b:
        notes.append(f"other tasks: only in {name_a}: {', '.join(only_a) or 'none'}; "
                     f"only in {name_b}: {', '.join(only_b) or 'none'}")
    differences += [f"scenario {key}: the scenario files differ (sha256 {_short(sa[key]['sha256'])} against "
                    f"{_short(sb[key]['sha256'])})" for key in sorted(set(sa) & set(sb))
                    if sa[key].get("sha256") != sb[key].get("sha256")]
    pa, pb = a.get("programs", {}), b.get("programs", {})
    for name in sorted(set(pa) & set(pb)):
        differences += _program_differences(name, pa[name], pb[name])
        if pa[name].get("backend") != pb[name].get("backend"):
            notes.append(f"program {name}: backend {pa[name].get('backend')} against {pb[name].get('backend')}")
    ca, cb = a.get("clinigym", {}), b.get("clinigym", {})
    if (ca.get("version"), ca.get("commit")) != (cb.get("version"), cb.get("commit")):
        notes.append(f"clinigym {ca.get('version')} at {_short(ca.get('commit'))} against {cb.get('version')} "
                     f"at {_short(cb.get('commit'))}")
    return Comparability(differences, notes)


def read_screen(run: Path) -> str:
    """The screen a run was played on, as WIDTHxHEIGHT (run.json's; 1920x1080 before runs said it)."""
    try:
        screen = json.loads((run / "run.json").read_text()).get("screen") or DEFAULT_SCREEN
    except (OSError, ValueError, AttributeError):
        screen = DEFAULT_SCREEN
    return "x".join(map(str, screen))


def check_runs(runs: list[Path]) -> Comparability:
    """Every run against the first."""
    first = read_provenance(runs[0])
    found = [comparability(str(runs[0]), first, str(run), read_provenance(run)) for run in runs[1:]]
    screens = [f"{runs[0]}: screen {read_screen(runs[0])} against {run}: {read_screen(run)}"
               for run in runs[1:] if read_screen(run) != read_screen(runs[0])]
    return Comparability(list(dict.fromkeys(d for c in found for d in c.differences)),
                         list(dict.fromkeys([*(n for c in found for n in c.notes), *screens])))
