"""The runs a report compares: loading, labels, colours, and how numbers are written."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from clinigym.core.errors import DataError
from clinigym.core.recording_schema import StepRecord
from clinigym.eval.scoring import DECAY, TaskResult, score_dirs
from clinigym.recording import Episode, episode_folders, read_episode

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


class ReportError(DataError):
    """A run folder that cannot be reported (missing, or without recorded episodes)."""


@dataclass
class Run:
    path: Path
    name: str
    agent: str
    summary: dict
    results: list            # TaskResult (steps, static) and GoalResult (plan, goal)
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
        ns = [r.n_steps for r in self.results if isinstance(r, TaskResult) and r.n_steps > 0]
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
    agents = list(dict.fromkeys(ep.header.agent for ep in episodes if ep.header.agent))
    if not agents and (path / "summary.json").exists():
        try:
            agents = [str(json.loads((path / "summary.json").read_text()).get("agent") or "")]
        except (OSError, ValueError):
            pass
    agent = "+".join(a for a in agents if a) or "unknown"
    return Run(path, _run_name(path), agent, summary, results, episodes)


def label_runs(runs: list[Run]) -> None:
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


def failure_text(m: dict) -> str:
    fails = dict(m.get("failures") or {}, **(m.get("live_outcomes") or {}))
    return ", ".join(f"{k}={v}" for k, v in fails.items()) or "-"


def outcome_of(rec: StepRecord) -> str:
    if rec.correct:
        return "correct"
    return "no_prediction" if rec.action is None else "wrong"


def action_text(action: dict | None) -> str:
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


