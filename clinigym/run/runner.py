"""Running agents over scenarios: one live program per app, shared by its scenarios;
every episode recorded; the run scored into `summary.json`."""
from __future__ import annotations

import json
import traceback
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from clinigym.agents import AGENTS, Agent, make_agent
from clinigym.envs import ground_truth
from clinigym.envs.base import ScreenEnv
from clinigym.envs.live import LiveEnv
from clinigym.envs.static import StaticEnv
from clinigym.eval.scoring import score_dirs
from clinigym.runtime.backends import make_backend
from clinigym.spec.apps import load_app
from clinigym.spec.scenarios import Scenario


@dataclass
class RunResult:
    summary: dict
    errors: list[dict] = field(default_factory=list)


def agent_for(env: ScreenEnv, name: str, seed: int | None = None, **options) -> Agent:
    """The agent `name` for an environment: built from its public context; the environment's
    ground truth is passed only to a privileged agent (the oracle)."""
    truth = ground_truth(env) if AGENTS[name].privileged else None
    return make_agent(name, env.agent_context(), seed, privileged=truth, **options)


def run_episode(env: ScreenEnv, agent: Agent, seed: int | None, reset_options: dict | None = None) -> dict:
    """One episode; the last step's public info."""
    obs, info = env.reset(seed=seed, options=reset_options)
    agent.reset(seed)
    while True:
        action = agent.act(obs, info)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info


def run(scenarios: list[Scenario], agent_name: str, out: Path, episodes: int = 1,
        seed: int = 0, recovery: bool = False, progress: bool = True,
        agent_options: dict | None = None, backend: str | None = None) -> RunResult:
    out = Path(out)
    episodes_dir = out / "episodes"
    episodes_dir.mkdir(parents=True, exist_ok=True)
    by_app: dict[str, list[Scenario]] = defaultdict(list)
    for s in scenarios:
        by_app[s.app].append(s)
    errors = []
    bar = tqdm(total=len(scenarios) * episodes, desc=f"{agent_name}", unit="ep", disable=not progress)
    for app_name, app_scenarios in by_app.items():
        program = make_backend(load_app(app_name), backend)
        try:
            for scenario in app_scenarios:
                env = LiveEnv(scenario, backend=program, record_dir=episodes_dir,
                              recovery=recovery, agent_name=agent_name)
                agent = agent_for(env, agent_name, seed, **(agent_options or {}))
                for ep in range(episodes):
                    bar.set_postfix_str(scenario.key)
                    try:
                        # Each scenario and episode gets its own seed (a random agent must not
                        # click the same point in every scenario), reproducible from --seed.
                        run_episode(env, agent, zlib.crc32(f"{seed}/{scenario.key}/{ep}".encode()))
                    except Exception as exc:  # noqa: BLE001 - one broken scenario must not stop the run
                        errors.append({"scenario": scenario.key, "episode": ep, "error": str(exc),
                                       "traceback": traceback.format_exc(limit=4)})
                    bar.update(1)
                env.close()
        finally:
            program.close()
    bar.close()
    return _finish(out, errors, agent=agent_name, episodes=episodes, seed=seed, recovery=recovery)


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
