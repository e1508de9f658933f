"""Recording and measuring the reference images of `screen` checks (`clinigym reference`).

A `screen` check compares a region of the final screen with a PNG stored beside the
scenario. This runs the oracle through the scenario in the steps mode to its end, writes
the region as that PNG (when it is missing, or asked to), and then measures over fresh
resets how well the check separates: the region's identity with the reference after the
oracle (should be 1.0: the programs render bit-identically) and on the untouched start
(must stay below the check's threshold, or the check could not tell a done task from an
undone one).
"""
from __future__ import annotations

import fnmatch
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from clinigym.core.errors import ClinigymError
from clinigym.envs.steps import StepsEnv
from clinigym.run.runner import agent_for
from clinigym.runtime.backends import Backend, make_backend
from clinigym.spec import paths
from clinigym.spec.apps import load_app
from clinigym.spec.conditions import ScreenRef, screen_identity, screen_region
from clinigym.spec.files import SpecError, parse, read_yaml
from clinigym.spec.scenarios import Scenario


@dataclass
class Measure:
    """One `screen` check of one scenario, over the episodes run."""
    scenario: str
    index: int                 # its place in the scenario's `check:`
    ref: ScreenRef
    recorded: bool = False     # the reference was written by this run
    finals: list[float] = field(default_factory=list)   # identity after the oracle, per measured run
    starts: list[float] = field(default_factory=list)   # identity on the untouched start, per run

    @property
    def ok(self) -> bool:
        return all(f >= self.ref.min_identical for f in self.finals) and \
            all(s < self.ref.min_identical for s in self.starts)

    def to_json(self) -> dict:
        return {"scenario": self.scenario, "check": self.index, "box": self.ref.box,
                "reference": str(self.ref.path), "min_identical": self.ref.min_identical,
                "recorded": self.recorded, "final": self.finals, "start": self.starts,
                "final_min": min(self.finals, default=None), "start_max": max(self.starts, default=None),
                "ok": self.ok}


def _load(path: Path) -> Scenario:
    """A scenario whose references may not exist yet (they are what is recorded)."""
    data = read_yaml(path)
    data["id"], data["path"] = path.stem, path.resolve()
    return parse(Scenario, data, path, record_references=True)


def screen_scenarios(pattern: str) -> list[Scenario]:
    """The scenarios matching the glob (on app/id or the app) that have a `screen` check."""
    found = []
    for path in paths.scenario_files():
        key = f"{path.parent.name}/{path.stem}"
        if fnmatch.fnmatch(key, pattern) or fnmatch.fnmatch(path.parent.name, pattern):
            scenario = _load(path)
            if any(c.screen for c in scenario.check):
                found.append(scenario)
    if not found:
        raise SpecError(pattern, "", "no scenario with a `screen` check matches")
    return found


def _episode(env: StepsEnv, seed: int, frames: Path | None) -> tuple:
    """The untouched start screen and the final screen after the oracle."""
    obs, info = env.reset(seed=seed)
    start = env.backend.display.grab()
    agent = agent_for(env, "oracle")
    while True:
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        if terminated or truncated:
            break
    if info.get("end_reason") != "completed":
        raise ClinigymError(f"{env.scenario.key}: the oracle did not complete ({info.get('end_reason')})")
    final, _ = env.backend.settle()   # waits for a quiet screen (a late repaint)
    if frames is not None:
        folder = frames / env.scenario.app / env.scenario.id
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(start.rgb).save(folder / f"start-{seed}.png")
        Image.fromarray(final.rgb).save(folder / f"final-{seed}.png")
    return start, final


def measure_scenario(scenario: Scenario, backend: Backend, runs: int, overwrite: bool = False,
                     frames: Path | None = None) -> list[Measure]:
    """Record the scenario's missing (or, with `overwrite`, all) references from one oracle
    episode, then measure every `screen` check over `runs` more episodes."""
    measures = [Measure(scenario.key, i, c.screen) for i, c in enumerate(scenario.check) if c.screen]
    # The environment judges the other checks; the screen checks are measured here (their
    # references may not exist yet).
    env = StepsEnv(scenario.model_copy(update={"check": [c for c in scenario.check if not c.screen]}),
                  backend=backend, agent_name="oracle")
    try:
        to_record = [m for m in measures if overwrite or not m.ref.path.is_file()]
        seed = 0
        if to_record:
            start, final = _episode(env, seed, frames)
            for m in to_record:
                m.ref.path.parent.mkdir(parents=True, exist_ok=True)
                Image.fromarray(screen_region(final, m.ref.box)).save(m.ref.path)
                m.recorded = True
            for m in measures:
                m.starts.append(screen_identity(m.ref, start))
                if not m.recorded:
                    m.finals.append(screen_identity(m.ref, final))
            seed += 1
        for _ in range(runs):
            start, final = _episode(env, seed, frames)
            for m in measures:
                m.starts.append(screen_identity(m.ref, start))
                m.finals.append(screen_identity(m.ref, final))
            seed += 1
    finally:
        env.close()
    return measures


def measure(scenarios: list[Scenario], runs: int, overwrite: bool = False, backend: str | None = None,
            frames: Path | None = None, report=print) -> list[Measure]:
    """Every scenario's `screen` checks, one running program per app (closed at the end)."""
    by_app: dict[str, list[Scenario]] = defaultdict(list)
    for s in scenarios:
        by_app[s.app].append(s)
    out: list[Measure] = []
    for app, app_scenarios in by_app.items():
        program = make_backend(load_app(app), backend)
        try:
            for scenario in app_scenarios:
                for m in measure_scenario(scenario, program, runs, overwrite, frames):
                    report(m)
                    out.append(m)
        finally:
            program.close()
    return out
