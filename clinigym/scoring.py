"""PROTOCOL.md's metrics over tasks: TCA, S1A, SHR, SHR_attempted, WPS, WPS_norm,
failure types, per program and per target size."""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from clinigym.judge import FAILURE_TYPES
from clinigym.recording import Episode, episode_folders, read_episode

DECAY = 0.8
SIZES = ("small", "medium", "large")


@dataclass(frozen=True)
class TaskResult:
    """One task's strict (first-error) outcome."""
    app: str
    task: str
    n_steps: int                  # scored steps n_t
    correct: int                  # correct prefix c_t
    failure: str | None = None    # label of the step that ended the task
    step_sizes: tuple[tuple[str, bool], ...] = ()   # (target size, correct) of attempted steps
    recovered: bool | None = None  # recovery mode: completed in the end


def _wps(c: int) -> float:
    return sum(DECAY ** i for i in range(c))


def metrics(results: list[TaskResult]) -> dict:
    scored = [r for r in results if r.n_steps > 0]
    t = len(scored)
    out: dict = {"n_tasks": t, "excluded_tasks": [r.task for r in results if r.n_steps == 0]}
    if not t:
        return out | {k: None for k in ("tca", "s1a", "shr", "shr_attempted", "wps", "wps_norm")} | {
            "failures": {}, "live_outcomes": {}}
    sum_c = sum(r.correct for r in scored)
    out.update(
        tca=sum(r.correct == r.n_steps for r in scored) / t,
        s1a=sum(r.correct >= 1 for r in scored) / t,
        shr=sum_c / sum(r.n_steps for r in scored),
        shr_attempted=sum_c / sum(min(r.correct + 1, r.n_steps) for r in scored),
        wps=sum(_wps(r.correct) for r in scored) / t,
        wps_norm=sum(_wps(r.correct) / _wps(r.n_steps) for r in scored) / t,
    )
    labels = Counter(r.failure for r in scored if r.correct < r.n_steps)
    out["failures"] = {k: labels[k] for k in FAILURE_TYPES if labels[k]}
    out["live_outcomes"] = {k: v for k, v in labels.items() if k not in FAILURE_TYPES}
    sizes: dict[str, list[bool]] = defaultdict(list)
    for r in scored:
        for size, ok in r.step_sizes:
            sizes[size].append(ok)
    out["per_size"] = {s: {"steps": len(sizes[s]), "accuracy": sum(sizes[s]) / len(sizes[s])}
                       for s in SIZES if sizes[s]}
    recovery = [r for r in scored if r.recovered is not None]
    if recovery:
        out["tca_recovery"] = sum(r.recovered for r in recovery) / len(recovery)
    return out


def summarize(results: list[TaskResult]) -> dict:
    """Overall metrics (micro-averaged over tasks) plus the same per program."""
    summary = metrics(results)
    by_app: dict[str, list[TaskResult]] = defaultdict(list)
    for r in results:
        by_app[r.app].append(r)
    summary["per_app"] = {app: metrics(rs) for app, rs in sorted(by_app.items())}
    return summary


def result_from_episode(ep: Episode) -> TaskResult:
    """Strict result of a recorded live episode: the correct prefix up to the first error."""
    h = ep.header
    correct, failure, sizes = 0, None, []
    for rec in ep.steps:
        sizes.append((rec.get("target_size") or "unknown", bool(rec["correct"])))
        if not rec["correct"]:
            failure = rec["failure"]
            break
        correct += 1
    n = h["n_steps"]
    if failure is None and correct < n:
        outcome = ep.outcome or {}
        # Ended without a judged error: the program died or the run was cut short.
        failure = "app_crashed" if outcome.get("status") in ("truncated", None, "abandoned") else "timeout"
    recovered = None
    if h.get("recovery"):
        recovered = (ep.outcome or {}).get("status") == "complete"
    return TaskResult(h["app"], h["scenario"], n, correct, failure, tuple(sizes), recovered)


def score_dirs(dirs: list[Path]) -> tuple[dict, list[TaskResult]]:
    results = [result_from_episode(read_episode(f)) for d in dirs for f in episode_folders(d)]
    return summarize(results), results


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:5.1f}%"


def format_table(summary: dict, title: str = "") -> str:
    """A plain-text table: one row per program and the overall row."""
    rows = [(app, m) for app, m in summary.get("per_app", {}).items()] + [("ALL", summary)]
    head = f"{'program':<14} {'tasks':>5} {'TCA':>7} {'S1A':>7} {'SHR':>7} {'SHR_att':>7} " \
           f"{'WPS':>6} {'WPS_n':>7}  failures"
    lines = [title] if title else []
    lines += [head, "-" * len(head)]
    for name, m in rows:
        fails = dict(m.get("failures", {}), **m.get("live_outcomes", {}))
        fail_text = ", ".join(f"{k}={v}" for k, v in fails.items()) or "-"
        wps = "-" if m.get("wps") is None else f"{m['wps']:.3f}"
        lines.append(f"{name:<14} {m['n_tasks']:>5} {_pct(m.get('tca')):>7} {_pct(m.get('s1a')):>7} "
                     f"{_pct(m.get('shr')):>7} {_pct(m.get('shr_attempted')):>7} {wps:>6} "
                     f"{_pct(m.get('wps_norm')):>7}  {fail_text}")
    return "\n".join(lines)

