"""Running agents over scenarios: every episode recorded, the run scored into `summary.json`.

A run writes its parameters to its folder first (`run.json`), numbers its episodes up front
(`plan`), and runs them in this process (one worker: one program instance per program,
shared by its scenarios) or in a pool of worker processes (`pool`); either way, the
episodes' outcomes are the same. `resume` continues a run that was stopped or killed from
its folder alone. A SIGINT or SIGTERM stops a run: what it started is closed and
RunStopped is raised.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from clinigym.envs.static import StaticEnv
from clinigym.eval.scoring import score_dirs
from clinigym.run.distributed import RayRun
from clinigym.run.episodes import Tally, agent_for, run_episode, run_here
from clinigym.run.pool import Pool
from clinigym.run.resume import holding, prepare_resume, read_errors, read_spec, write_spec
from clinigym.run.schedule import Planned, RunSpec, ScenarioRef, partition, plan_episodes
from clinigym.run.stopping import STOP_SIGNALS, RunStopped, stop_on
from clinigym.runtime.slots import mark_owner
from clinigym.spec import paths
from clinigym.spec.scenarios import Scenario, load_scenario

__all__ = ["RunResult", "RunStopped", "agent_for", "resume", "run", "run_episode", "run_static"]


@dataclass
class RunResult:
    summary: dict
    errors: list[dict] = field(default_factory=list)


def run(scenarios: list[Scenario], agent_name: str, out: Path, episodes: int = 1,
        seed: int = 0, recovery: bool = False, progress: bool = True,
        agent_options: dict | None = None, backend: str | None = None, mode: str = "steps",
        budget: int | None = None, workers: int = 1, ray: str | None = None) -> RunResult:
    """Every scenario `episodes` times in a mode (`clinigym.core.context.MODES`); `recovery`
    is for the steps mode, `budget` (actions per episode) for the plan and goal modes.
    `workers` > 1 runs episodes at once in that many processes, each with its own program
    instances: the agent must then be one the registry has when clinigym is imported, and
    a script that calls this must guard its entry point (`if __name__ == "__main__":`), as
    for any pool of processes started with `spawn`. `ray` (a cluster's address, or "auto")
    runs them on a Ray cluster instead, `workers` actors (`clinigym.run.distributed`)."""
    spec = RunSpec(tuple(str(s.path) for s in scenarios), agent_name, dict(agent_options or {}), episodes,
                   seed, mode, recovery, budget, backend,
                   tuple(str(f) for f in paths.folders() if f != paths.builtin_root()))
    out = Path(out)
    (out / "episodes").mkdir(parents=True, exist_ok=True)
    return _execute(spec, out, _plan(spec, scenarios), workers, progress, resuming=False, ray=ray)


def resume(out: Path, workers: int = 1, progress: bool = True, ray: str | None = None) -> RunResult:
    """Continue a run that was stopped or killed, from its folder alone: finished episodes
    are kept, one that was cut off runs again from its reset; the summary is the one an
    uninterrupted run gives."""
    out = Path(out)
    spec = read_spec(out)
    for folder in spec.search_path:
        paths.add_folder(folder)
    return _execute(spec, out, _plan(spec, [load_scenario(Path(p)) for p in spec.scenarios]), workers,
                    progress, resuming=True, ray=ray)


def _plan(spec: RunSpec, scenarios: list[Scenario]) -> list[Planned]:
    return plan_episodes([ScenarioRef(str(s.path), s.key, s.app) for s in scenarios], spec.episodes, spec.seed)


def _execute(spec: RunSpec, out: Path, planned: list[Planned], workers: int, progress: bool,
             resuming: bool, ray: str | None) -> RunResult:
    episodes_dir = out / "episodes"
    with holding(out):
        if resuming:
            todo = prepare_resume(out, planned)
        else:
            write_spec(out, spec)
            todo = planned
        mark_owner()   # the programs it starts are this run's (workers mark their own)
        tally = Tally(out, len(planned), len(planned) - len(todo), f"{spec.agent} ({spec.mode})", progress)
        try:
            if ray and todo:
                RayRun(spec, episodes_dir, tally, workers, ray).run(todo)
            elif workers > 1 and todo:
                Pool(spec, episodes_dir, tally, workers).run(todo)
            else:
                with stop_on(*STOP_SIGNALS) as guard:
                    run_here(spec, episodes_dir, partition(todo, 1), tally, guard)
                    guard.check()
        finally:
            tally.close()
    errors = [e.summary() for e in read_errors(out)]
    return _finish(out, errors, **spec.summary_fields())


def run_static(dataset: Path, agent_name: str, out: Path, software: str | None = None, seed: int = 0,
               single_step: bool = False, delta: float = 0.0, progress: bool = True,
               agent_options: dict | None = None) -> RunResult:
    """The same agents on a MedSPOT-format dataset's keyframes, one episode per task."""
    out = Path(out)
    env = StaticEnv(dataset, software=software, record_dir=out / "episodes", single_step=single_step,
                    delta=delta, agent_name=agent_name)
    agent = agent_for(env, agent_name, seed, **(agent_options or {}))
    errors = []
    for task in tqdm(env.tasks, desc=f"{agent_name} (static)", unit="task", disable=not progress):
        try:
            run_episode(env, agent, seed, {"task": task.key})
        except Exception as exc:  # noqa: BLE001 - one broken task must not stop the run
            errors.append({"scenario": task.key, "episode": 0, "error": str(exc)})
    env.close()
    return _finish(out, errors, agent=agent_name, dataset=str(dataset), single_step=single_step,
                   delta=delta, skipped_tasks=env.skipped_tasks)


def _finish(out: Path, errors: list[dict], **fields) -> RunResult:
    summary, _ = score_dirs([out / "episodes"])
    summary.update(fields, errors=errors)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return RunResult(summary, errors)
