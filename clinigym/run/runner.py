"""Running agents over scenarios: every episode recorded, the run scored into `summary.json`.

A run writes its parameters to its folder first (`run.json`), numbers its episodes up front
(`plan`), and runs them in this process (one worker: one program instance per program,
shared by its scenarios) or in a pool of worker processes (`pool`); either way, the
episodes' outcomes are the same. `resume` continues a run that was stopped or killed from
its folder alone; `like` runs a finished run's episodes again, with its settings, into a new
folder. A SIGINT or SIGTERM stops a run: what it started is closed and RunStopped is raised.

With an agent that talks to a model server (http, cua), the server is asked first whether
it answers and serves the model (`preflight`): ServerUnavailable or ModelNotServed before
any episode or folder. A server that dies mid-run stops it (`clinigym.run.episodes`):
`RunResult.stopped` says why, the summary is written, and a resume continues it.

`run.json` and `summary.json` carry the run's provenance (`clinigym.run.provenance`):
run.json's of the process that started the run, summary.json's of the one that finished it.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from clinigym.agents import http
from clinigym.agents.registry import check_agent, resolve
from clinigym.envs.observations import obs_mode
from clinigym.envs.static import StaticEnv
from clinigym.eval.scoring import score_dirs
from clinigym.run import provenance
from clinigym.run.distributed import RayRun
from clinigym.run.episodes import RETRIES, Tally, agent_for, run_episode, run_here
from clinigym.run.pool import Pool
from clinigym.run.resume import SERVER_DOWN, holding, prepare_resume, read_errors, read_spec, write_spec
from clinigym.run.schedule import Planned, RunSpec, ScenarioRef, partition, plan_episodes
from clinigym.run.stopping import STOP_SIGNALS, RunStopped, stop_on
from clinigym.runtime.display import Geometry
from clinigym.runtime.slots import mark_owner
from clinigym.spec import paths
from clinigym.spec.scenarios import Scenario
from clinigym.spec.screen_size import check_screen_size
from clinigym.spec.task_families import Family, load_task

__all__ = ["RunResult", "RunStopped", "agent_for", "like", "preflight", "resume", "run", "run_episode",
           "run_static"]


@dataclass
class RunResult:
    summary: dict
    errors: list[dict] = field(default_factory=list)
    stopped: str | None = None     # why the run ended before its last episode (its model server died)


def run(scenarios: list[Scenario | Family], agent_name: str, out: Path, episodes: int = 1,
        seed: int = 0, recovery: bool = False, progress: bool = True,
        agent_options: dict | None = None, backend: str | None = None, mode: str = "steps",
        budget: int | None = None, workers: int = 1, ray: str | None = None,
        audit: str = "per_step", retries: int = RETRIES, observation: str = "screenshot",
        screen: Geometry = Geometry(), split: str | None = None) -> RunResult:
    """Every scenario `episodes` times in a mode (`clinigym.core.context.MODES`); `recovery`
    is for the steps mode, `budget` (actions per episode) and `audit` (when the safety audit
    runs: `clinigym.envs.goal.AUDITS`) for the plan and goal modes.
    `workers` > 1 runs episodes at once in that many processes, each with its own program
    instances, each building the agent itself (a built-in agent, an entry point's, or a
    `package.module:factory` importable there: `clinigym.agents.plugins`), and
    a script that calls this must guard its entry point (`if __name__ == "__main__":`), as
    for any pool of processes started with `spawn`. `ray` (a cluster's address, or "auto")
    runs them on a Ray cluster instead, `workers` actors (`clinigym.run.distributed`).
    An episode the infrastructure ended runs again from its reset up to `retries` times,
    then is an infrastructure error (`clinigym.run.episodes`; docs/concepts.md).
    `observation` is what the agent observes (`clinigym.envs.observations.OBS_MODES`);
    `screen` the virtual screen's size (a scenario with pixel boxes runs at 1920x1080 only:
    `clinigym.spec.screen_size`); `split` the part of the task families' pools their instances
    draw from (`clinigym.spec.cohort.SPLITS`). The agent and its options are checked before anything starts."""
    obs_mode(observation)   # a ValueError naming the known modes
    spec = RunSpec(tuple(str(s.path) for s in scenarios), agent_name, dict(agent_options or {}), episodes,
                   seed, mode, recovery, budget, backend,
                   tuple(str(f) for f in paths.folders() if f != paths.builtin_root()), audit, observation,
                   (screen.width, screen.height), split)
    return _start(spec, scenarios, Path(out), workers, progress, ray, retries)


def like(run_dir: Path, out: Path, workers: int = 1, progress: bool = True, ray: str | None = None,
         retries: int = RETRIES) -> RunResult:
    """The run in `run_dir` again into the new folder `out`: the same scenario files, mode,
    agent and options, seeds, episodes, budget, recovery, backend and screen (its run.json)."""
    spec = read_spec(Path(run_dir))
    for folder in spec.search_path:
        paths.add_folder(folder)
    return _start(spec, [load_task(Path(p)) for p in spec.scenarios], Path(out), workers, progress, ray,
                  retries)


def _start(spec: RunSpec, scenarios: list[Scenario | Family], out: Path, workers: int, progress: bool,
           ray: str | None, retries: int) -> RunResult:
    source = check_agent(spec.agent, spec.agent_options, spec.observation).source
    for s in scenarios:   # a scenario that cannot be judged at this size is refused before anything runs
        check_screen_size(s.scenario if isinstance(s, Family) else s, *spec.screen)
    served = preflight(spec.agent, spec.agent_options)
    planned = _plan(spec, scenarios)
    (out / "episodes").mkdir(parents=True, exist_ok=True)
    return _execute(spec, out, planned, workers, progress, resuming=False, ray=ray,
                    origin=_provenance(spec, scenarios, planned, source, served), retries=retries)


def resume(out: Path, workers: int = 1, progress: bool = True, ray: str | None = None,
           retries: int = RETRIES) -> RunResult:
    """Continue a run that was stopped or killed, from its folder alone: finished episodes
    are kept, one that was cut off runs again from its reset; the summary is the one an
    uninterrupted run gives."""
    out = Path(out)
    spec = read_spec(out)
    source = check_agent(spec.agent, spec.agent_options, spec.observation).source
    for folder in spec.search_path:
        paths.add_folder(folder)
    served = preflight(spec.agent, spec.agent_options)
    scenarios = [load_task(Path(p)) for p in spec.scenarios]
    planned = _plan(spec, scenarios)
    return _execute(spec, out, planned, workers, progress, resuming=True, ray=ray,
                    origin=_provenance(spec, scenarios, planned, source, served), retries=retries)


def preflight(agent: str, options: dict[str, Any]) -> dict[str, Any] | None:
    """For a built-in agent that talks to a model server (one with a --base-url option: http,
    cua): the server answers and serves the model (`clinigym.agents.http.preflight`), else
    ServerUnavailable or ModelNotServed, whose messages name the address and the model. A
    server without a model list is used with a warning on stderr. Returns the address, the
    model and the server's entry for it (for the provenance); None for other agents."""
    entry = resolve(agent)
    defaults = {o.dest: o.default for o in entry.options}
    if entry.source is not None or "base_url" not in defaults:
        return None

    def value(key: str) -> Any:
        return defaults.get(key) if options.get(key) is None else options[key]
    served = http.preflight(value("base_url"), value("model"), value("api_key_env"),
                            timeout=min(float(value("timeout") or 10.0), 10.0))
    if served.warning:
        print(f"warning: {served.warning}", file=sys.stderr)
    return {"base_url": value("base_url"), "model": value("model"), "listed": served.entry}


def _provenance(spec: RunSpec, scenarios: list[Scenario | Family], planned: list[Planned], source: str | None,
                served: dict[str, Any] | None) -> dict[str, Any]:
    return provenance.collect(spec, scenarios, {p.number: p.seed for p in planned}, source, served)


def _plan(spec: RunSpec, scenarios: list[Scenario | Family]) -> list[Planned]:
    return plan_episodes([ScenarioRef(str(s.path), s.key, s.app) for s in scenarios], spec.episodes, spec.seed)


def _execute(spec: RunSpec, out: Path, planned: list[Planned], workers: int, progress: bool,
             resuming: bool, ray: str | None, origin: dict[str, Any], retries: int) -> RunResult:
    if retries < 0:
        raise ValueError(f"retries: at least 0 (the runs again of an episode the infrastructure ended), "
                         f"not {retries}")
    episodes_dir = out / "episodes"
    with holding(out):
        if resuming:
            todo = prepare_resume(out, planned)
        else:
            write_spec(out, spec, origin)
            todo = planned
        mark_owner()   # the programs it starts are this run's (workers mark their own)
        tally = Tally(out, len(planned), len(planned) - len(todo), f"{spec.agent} ({spec.mode})", progress)
        try:
            if ray and todo:
                RayRun(spec, episodes_dir, tally, workers, ray, retries).run(todo)
            elif workers > 1 and todo:
                Pool(spec, episodes_dir, tally, workers, retries).run(todo)
            else:
                with stop_on(*STOP_SIGNALS) as guard:
                    run_here(spec, episodes_dir, partition(todo, 1), tally, guard, retries)
                    guard.check()
        finally:
            tally.close()
    ledger = read_errors(out)
    stopped = next((e.error.removeprefix("not run: ") for e in ledger if e.cause == SERVER_DOWN), None)
    infra = sum(e.cause is not None for e in ledger)
    fields: dict[str, Any] = {**spec.summary_fields(), "provenance": origin}
    if origin["agent"].get("source"):
        fields["agent_source"] = origin["agent"]["source"]
    if infra:
        fields["infrastructure_errors"] = infra
    if stopped:
        fields["stopped"] = stopped
    result = _finish(out, [e.summary() for e in ledger], **fields)
    result.stopped = stopped
    return result


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
