"""MedSPOT's metrics (docs/protocols/medspot.md) over tasks: TCA, S1A, SHR, SHR_attempted, WPS, WPS_norm,
failure types, bootstrap confidence intervals, breakdowns per program, task
category and target size, recovery metrics beside the strict ones, and
single-step accuracy beside the sequential figures."""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clinigym.core.errors import DataError
from clinigym.core.judge import FAILURE_TYPES
from clinigym.envs.base import CAUSE_INFRASTRUCTURE
from clinigym.eval.formatting import pct
from clinigym.recording import Episode, episode_folders, read_episode

DECAY = 0.8
SIZES = ("small", "medium", "large")
METRICS = ("tca", "s1a", "shr", "shr_attempted", "wps", "wps_norm")
BOOTSTRAP = 1000
BOOTSTRAP_SEED = 42

# Task categories from the task overview, first match wins (MedSPOT's files carry no category).
CATEGORIES = (
    ("data management", r"delet|anonymi|import|export|download|upload|save|send|print|modif|protect|queue"),
    ("annotation and measurement", r"measur|annotat|draw|paint|layer|shutter|ruler|segment|label|roi\b|mark"),
    ("configuration", r"preferen|setting|configur|option|enable|disable"),
    ("image adjustment", r"window|level|preset|contrast|invert|rotat|flip|lut\b|colou?r|bright|interpolat"
                         r"|render|appearance|c/w"),
    ("viewing and navigation", r"view|open|display|zoom|layout|preview|fit|series|navigat|scroll|slice"
                               r"|page|grid|image|study|log"),
)


def categorize(overview: str) -> str:
    text = overview.lower()
    return next((name for name, rx in CATEGORIES if re.search(rx, text)), "other")


@dataclass(frozen=True)
class TaskResult:
    """One task: its strict (first-error) outcome, and every step's result when known."""
    app: str
    task: str
    n_steps: int                  # scored steps n_t
    correct: int                  # correct prefix c_t
    failure: str | None = None    # label of the step that ended the task
    step_sizes: tuple[tuple[str, bool], ...] = ()   # (target size, correct) of attempted steps
    recovered: bool | None = None  # recovery mode: completed in the end
    category: str = "other"
    steps_correct: tuple[bool, ...] | None = None   # single-step mode: every step judged alone


def _core(c: np.ndarray, n: np.ndarray) -> dict[str, np.ndarray]:
    """The six metrics, vectorised over a leading resample axis (c and n: [..., T])."""
    decay_sum = (1 - DECAY ** c) / (1 - DECAY)
    full_sum = (1 - DECAY ** n) / (1 - DECAY)
    return {
        "tca": np.mean(c == n, axis=-1),
        "s1a": np.mean(c >= 1, axis=-1),
        "shr": c.sum(-1) / n.sum(-1),
        "shr_attempted": c.sum(-1) / np.minimum(c + 1, n).sum(-1),
        "wps": np.mean(decay_sum, axis=-1),
        "wps_norm": np.mean(decay_sum / full_sum, axis=-1),
    }


def confidence_intervals(results: list[TaskResult], resamples: int = BOOTSTRAP,
                         seed: int = BOOTSTRAP_SEED) -> dict[str, list[float]]:
    """95% intervals by bootstrap over tasks."""
    scored = [r for r in results if r.n_steps > 0]
    if not scored:
        return {}
    c = np.array([r.correct for r in scored], dtype=float)
    n = np.array([r.n_steps for r in scored], dtype=float)
    idx = np.random.default_rng(seed).integers(0, len(scored), size=(resamples, len(scored)))
    boot = _core(c[idx], n[idx])
    return {k: [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))] for k, v in boot.items()}


def metrics(results: list[TaskResult], with_ci: bool = False) -> dict:
    scored = [r for r in results if r.n_steps > 0]
    t = len(scored)
    out: dict = {"n_tasks": t, "excluded_tasks": [r.task for r in results if r.n_steps == 0]}
    if not t:
        return out | {k: None for k in METRICS} | {"failures": {}, "live_outcomes": {}}
    core = _core(np.array([r.correct for r in scored], dtype=float),
                 np.array([r.n_steps for r in scored], dtype=float))
    out.update({k: float(v) for k, v in core.items()})
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
    single = [ok for r in scored if r.steps_correct is not None for ok in r.steps_correct]
    if single:
        out["single_step_accuracy"] = sum(single) / len(single)
    if with_ci:
        out["ci95"] = confidence_intervals(scored)
    return out


def summarize(results: list[TaskResult]) -> dict:
    """Overall metrics (micro-averaged over tasks, with bootstrap intervals), and the
    same per program and per task category."""
    summary = metrics(results, with_ci=True)
    for key, attr in (("per_app", "app"), ("per_category", "category")):
        groups: dict[str, list[TaskResult]] = defaultdict(list)
        for r in results:
            groups[getattr(r, attr)].append(r)
        summary[key] = {name: metrics(rs) for name, rs in sorted(groups.items())}
    return summary


def result_from_episode(ep: Episode) -> TaskResult:
    """Strict result of a recorded episode: the correct prefix up to the first error."""
    h = ep.header
    correct, failure, sizes = 0, None, []
    for rec in ep.steps:
        sizes.append((rec.target_size or "unknown", bool(rec.correct)))
        if not rec.correct:
            failure = rec.failure
            break
        correct += 1
    n = h.n_steps
    if failure is None and correct < n:
        # Ended without a judged error: the program died or the run was cut short.
        failure = "app_crashed" if ep.status in ("truncated", None, "abandoned") else "timeout"
    recovered = ep.status == "complete" if h.recovery else None
    steps_correct = tuple(bool(rec.correct) for rec in ep.steps) if h.single_step else None
    return TaskResult(h.app, h.scenario, n, correct, failure, tuple(sizes), recovered,
                      h.category or categorize(h.overview), steps_correct)


def score_dirs(dirs: list[Path], penalties: str | None = None) -> tuple[dict, list]:
    """Steps-mode (and static) episodes get MedSPOT's metrics (docs/protocols/medspot.md); plan and goal episodes
    get theirs (`clinigym.eval.goal_scoring`) under `summary["modes"]`. The results list
    holds both kinds. An episode the infrastructure ended (status "error" after a run's
    retries, or a recording whose outcome's cause is "infrastructure": docs/concepts.md, "How
    an episode ends") is in no metric: `infrastructure_errors` counts them, when any.
    Episodes of different observation modes are not scored together (a DataError):
    `summary["observation"]` is the one they share, when not the screenshot."""
    from clinigym.core.audit import DEFAULT_PENALTIES
    from clinigym.eval.goal_scoring import GOAL_MODES, goal_result, summarize_goal
    read = [read_episode(f) for d in dirs for f in episode_folders(d)]
    observations = Counter(ep.header.observation for ep in read)
    if len(observations) > 1:
        raise DataError("these episodes observed in different modes ("
                        + ", ".join(f"{m}: {n}" for m, n in sorted(observations.items()))
                        + "); score each mode's episodes apart")
    episodes = [ep for ep in read if not infrastructure_ended(ep)]
    steps = [result_from_episode(ep) for ep in episodes if ep.header.mode not in GOAL_MODES]
    goals = [goal_result(ep) for ep in episodes if ep.header.mode in GOAL_MODES]
    summary = summarize(steps)
    if goals:
        summary["modes"] = summarize_goal(goals, penalties or DEFAULT_PENALTIES)
    if len(read) > len(episodes):
        summary["infrastructure_errors"] = len(read) - len(episodes)
    if set(observations) - {"screenshot"}:   # the default is not written: summaries stay as they were
        summary["observation"] = next(iter(observations))
    return summary, [*steps, *goals]


def infrastructure_ended(ep: Episode) -> bool:
    """Whether the infrastructure, not the agent, ended the episode (it is in no metric)."""
    outcome = ep.header.outcome
    return ep.status == "error" or (outcome is not None and outcome.extra.get("cause") == CAUSE_INFRASTRUCTURE)


def format_table(summary: dict, title: str = "") -> str:
    """Plain-text tables: MedSPOT's metrics (docs/protocols/medspot.md) of the steps-mode tasks, one row per program
    and the overall row (with its 95% CI below); then one table per plan or goal mode; then
    the count of infrastructure errors, when any."""
    from clinigym.eval.goal_scoring import format_goal_table
    goal_tables = [format_goal_table(mode, m) for mode, m in summary.get("modes", {}).items()]
    infra = summary.get("infrastructure_errors")
    note = [f"infrastructure errors: {infra} episodes, in no metric above"] if infra else []
    observation = summary.get("observation", "screenshot")
    if observation != "screenshot":   # the scores of each observation mode stay apart
        title = "\n".join([*([title] if title else []), f"observation: {observation}"])
    if goal_tables and not summary.get("n_tasks"):
        return "\n\n".join(([title] if title else []) + goal_tables + note)
    return "\n\n".join([_steps_table(summary, title), *goal_tables, *note])


def _steps_table(summary: dict, title: str) -> str:
    rows = [(app, m) for app, m in summary.get("per_app", {}).items()] + [("ALL", summary)]
    head = f"{'program':<14} {'tasks':>5} {'TCA':>7} {'S1A':>7} {'SHR':>7} {'SHR_att':>7} " \
           f"{'WPS':>6} {'WPS_n':>7}  failures"
    lines = [title] if title else []
    lines += [head, "-" * len(head)]
    for name, m in rows:
        fails = dict(m.get("failures", {}), **m.get("live_outcomes", {}))
        fail_text = ", ".join(f"{k}={v}" for k, v in fails.items()) or "-"
        wps = "-" if m.get("wps") is None else f"{m['wps']:.3f}"
        lines.append(f"{name:<14} {m['n_tasks']:>5} {pct(m.get('tca')):>7} {pct(m.get('s1a')):>7} "
                     f"{pct(m.get('shr')):>7} {pct(m.get('shr_attempted')):>7} {wps:>6} "
                     f"{pct(m.get('wps_norm')):>7}  {fail_text}")
    ci = summary.get("ci95")
    if ci:
        lines.append("95% CI (bootstrap over tasks): " + ", ".join(
            f"{k.upper()} {pct(lo).strip()}-{pct(hi).strip()}" for k, (lo, hi) in ci.items()
            if k in ("tca", "s1a", "shr")))
    if "single_step_accuracy" in summary:
        lines.append(f"single-step accuracy: {pct(summary['single_step_accuracy']).strip()}")
    if "tca_recovery" in summary:
        lines.append(f"TCA with recovery: {pct(summary['tca_recovery']).strip()}")
    return "\n".join(lines)
