"""Running a run's episodes: chunks on one program instance (in this process or in a pool
worker, the same code), and the run's tally (the progress bar, the error ledger).

A model server that gives no usable reply to a request after the agent's own retries
(`clinigym.agents.http.ServerUnavailable`) ends that episode as an infrastructure error:
its recording's status is "error" (in no metric; a resume runs it again), its error in the
ledger has the cause SERVER_FAILED. After SERVER_STRIKES such episodes in a row (no episode
ending normally between them), the server is taken for dead: the process runs no further
episode and ends each it is given at once as not run (cause SERVER_DOWN), so that the run
stops soon with every worker (`clinigym.run.runner` reports it; a resume runs them).

An episode the infrastructure ended (docs/concepts.md, "How an episode ends": its recording's
cause says so, or a ProgramError came out of the environment, its reset having failed twice)
runs again from its reset, up to RETRIES times (`clinigym run --retries`), its worker's earlier
deaths counted (`clinigym.run.pool`); each attempt is noted in the header of the recording
that stays (`extra["retries"]`). After the last it is an infrastructure error (status
"error", cause INFRASTRUCTURE): in no metric, counted, and a resume runs it again.
"""
from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from clinigym.agents import Agent, make_agent, resolve
from clinigym.agents.http import ServerUnavailable
from clinigym.core.errors import ProgramError
from clinigym.envs import ground_truth
from clinigym.envs.base import CAUSE_INFRASTRUCTURE, ScreenEnv
from clinigym.envs.registration import make_env
from clinigym.recording.writer import numbered
from clinigym.run.resume import (
    INFRASTRUCTURE,
    SERVER_DOWN,
    SERVER_FAILED,
    EpisodeError,
    append_error,
    discard,
    end_as_error,
    ended_cause,
    note_retries,
)
from clinigym.run.schedule import Chunk, Planned, RunSpec
from clinigym.run.stopping import StopGuard
from clinigym.runtime.backends import Backend, make_backend
from clinigym.runtime.backends.base import Death
from clinigym.runtime.display import Geometry
from clinigym.spec.apps import load_app
from clinigym.spec.task_families import Family, load_task

SERVER_STRIKES = 3   # episodes in a row ended by an unanswered request: the model server is down
RETRIES = 2          # runs again of an episode the infrastructure ended: 3 attempts in all, as on Ray
Started = Callable[[Planned], None]
Ended = Callable[[Planned, EpisodeError | None], None]
Retried = Callable[[Planned, dict[str, Any]], None]   # an attempt the infrastructure ended, to run again
Attempts = Mapping[int, Sequence[dict[str, Any]]]   # episode number -> its earlier attempts' errors


def agent_for(env: ScreenEnv, name: str, seed: int | None = None, **options: Any) -> Agent:
    """The agent `name` (built-in, an entry point's, or `package.module:factory`: imported
    in the process that runs the episodes) for an environment: built from its public
    context; the environment's ground truth is passed only to a privileged agent (the oracle)."""
    truth = ground_truth(env) if resolve(name).privileged else None
    return make_agent(name, env.agent_context(), seed, privileged=truth, **options)


def run_episode(env: ScreenEnv, agent: Agent, seed: int | None,
                reset_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """One episode; the last step's public info."""
    obs, info = env.reset(seed=seed, options=reset_options)
    agent.reset(seed)
    while True:
        action = agent.act(obs, info)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info


class ChunkRunner:
    """Runs chunks of a run's episodes on one program instance, kept from one chunk to the
    next while they are of the same program. One environment and agent per scenario, as
    a single process has always run them. An episode that the infrastructure ended (its
    recording's cause, or a ProgramError out of the environment: a reset that failed after
    its own retry) runs again from its reset, up to `retries` times counting the attempts
    in `earlier` (its worker's or actor's deaths), each noted in its recording's header
    (`extra["retries"]`); after the last, it is an infrastructure error. An episode that
    fails otherwise is reported and the next one runs; a stop (RunStopped, not an
    Exception) goes up at once, and the episode it cut off keeps no outcome, so that a
    resume runs it again."""

    def __init__(self, spec: RunSpec, episodes_dir: Path, retries: int = RETRIES):
        self.spec = spec
        self.episodes_dir = episodes_dir
        self.retries = retries
        self.backend: Backend | None = None
        self.app: str | None = None
        self.current: tuple[str, ScreenEnv, Agent] | None = None   # scenario file, its environment and agent
        self.strikes = 0                 # episodes in a row ended by ServerUnavailable
        self.down: str | None = None     # why the model server is taken for dead

    def run(self, chunk: Chunk, started: Started, ended: Ended, earlier: Attempts | None = None,
            retried: Retried | None = None) -> None:
        for p in chunk.episodes:
            started(p)
            if self.down:
                ended(p, EpisodeError(p.number, p.key, p.episode, f"not run: {self.down}", pid=os.getpid(),
                                      cause=SERVER_DOWN))
                continue
            tries = list((earlier or {}).get(p.number, ()))
            error, fault = self._attempt(p)
            while fault is not None and len(tries) < self.retries:
                tries.append({"error": fault, "pid": os.getpid()})
                discard(self.episodes_dir, p.number)
                if retried is not None:
                    retried(p, tries[-1])
                error, fault = self._attempt(p)
            if fault is not None:
                end_as_error(self.episodes_dir, p.number, f"{INFRASTRUCTURE}: {fault}")
                error = error or EpisodeError(p.number, p.key, p.episode, fault, pid=os.getpid(),
                                              cause=INFRASTRUCTURE)
            if tries:
                note_retries(self.episodes_dir, p.number, tries)
            ended(p, error)
        self._close_env()

    def _attempt(self, p: Planned) -> tuple[EpisodeError | None, str | None]:
        """Run episode `p` once: (its error, why the infrastructure ended it), each None
        when it did not."""
        try:
            if self.current is None or self.current[0] != p.path:
                self._close_env()
                env = self._env(p)
                self.current = (p.path, env, agent_for(env, self.spec.agent, self.spec.seed,
                                                       **self.spec.agent_options))
            with numbered(p.number):
                run_episode(self.current[1], self.current[2], p.seed)
            self.strikes = 0
        except ServerUnavailable as exc:
            self._close_env()     # ends its recording, which is then marked
            end_as_error(self.episodes_dir, p.number, f"{SERVER_FAILED}: {exc.problem}")
            self.strikes += 1
            if self.strikes >= SERVER_STRIKES:
                self.down = (f"the model server at {exc.base_url} (model {exc.model}) stopped answering: "
                             f"{self.strikes} episodes in a row ended by a request it did not answer")
            return EpisodeError(p.number, p.key, p.episode, str(exc), traceback.format_exc(limit=4),
                                os.getpid(), cause=SERVER_FAILED), None
        except ProgramError as exc:   # out of the environment: its reset failed twice, or worse
            self._close_env()     # ends its recording (abandoned), so that it can be discarded
            fault = f"{type(exc).__name__}: {exc}"
            return EpisodeError(p.number, p.key, p.episode, fault, traceback.format_exc(limit=4), os.getpid(),
                                cause=INFRASTRUCTURE), fault
        except Exception as exc:  # noqa: BLE001 - one broken episode must not stop the run
            error = EpisodeError(p.number, p.key, p.episode, str(exc), traceback.format_exc(limit=4), os.getpid())
            died = self._killed()
            if died is None:
                return error, None
            # a library that failed under a display or container killed from outside (Xlib's bare
            # assertion): the fault's
            self._close_env()
            fault = f"{died} ({type(exc).__name__}: {exc})"
            return replace(error, error=fault, cause=INFRASTRUCTURE), fault
        cause, reason = ended_cause(self.episodes_dir, p.number)
        return None, (reason or "ended by the infrastructure") if cause == CAUSE_INFRASTRUCTURE else None

    def _killed(self) -> Death | None:
        """The program's death, when the infrastructure's (`Backend.dead`); else None."""
        try:
            died = self.backend.dead() if self.backend is not None else None
        except Exception:  # noqa: BLE001 - a backend that cannot even tell is not taken for a fault
            return None
        return died if died is not None and died.infrastructure else None

    def _close_env(self) -> None:
        if self.current is not None:
            env, self.current = self.current[1], None
            env.close()

    def _env(self, p: Planned) -> ScreenEnv:
        if self.app != p.app:
            self.close()
            # Accessibility is switched on by the environment whose scenario or observation reads the tree.
            self.backend = make_backend(load_app(p.app), self.spec.backend, Geometry(*self.spec.screen))
            self.app = p.app
        s = self.spec
        options: dict[str, Any] = ({"recovery": s.recovery} if s.mode == "steps"
                                   else {"budget": s.budget, "audit": s.audit})
        task = load_task(Path(p.path))
        if isinstance(task, Family) and s.split:
            options["split"] = s.split
        env: ScreenEnv = make_env(task, s.mode, backend=self.backend, record_dir=self.episodes_dir,
                                  agent_name=s.agent, obs_mode=s.observation, **options)
        return env

    def close(self) -> None:
        """Close the program instance. An environment still open here was cut off by a stop:
        it is dropped unclosed, so that its episode keeps no outcome (closing would record it
        abandoned) and a resume runs it again."""
        self.current = None
        if self.backend is not None:
            self.backend.close()
            self.backend, self.app = None, None


class Tally:
    """The run's progress: episodes done, running and failed on the bar; each failure in
    the run folder's error ledger as it happens."""

    def __init__(self, out: Path, total: int, done: int, desc: str, progress: bool):
        self.out = out
        self.running = 0
        self.failed = 0
        self.retries = 0
        self.bar = tqdm(total=total, initial=done, desc=desc, unit="ep", disable=not progress)

    def started(self, p: Planned) -> None:
        self.running += 1
        self._show(p.key)

    def retried(self, p: Planned, running: bool = False) -> None:
        """The infrastructure ended an attempt of it and it runs again: at once in its worker
        (`running`), or once a new worker (or Ray actor) takes it, its own having died."""
        self.running -= not running
        self.retries += 1
        self._show(p.key)

    def ended(self, p: Planned, error: EpisodeError | None) -> None:
        self.running -= 1
        if error is not None:
            self.failed += 1
            append_error(self.out, error)
        self.bar.update(1)
        self._show(p.key)

    def _show(self, key: str) -> None:
        retried = f", retried {self.retries}" if self.retries else ""
        self.bar.set_postfix_str(f"running {self.running}, failed {self.failed}{retried}; {key}")

    def close(self) -> None:
        self.bar.close()


def run_here(spec: RunSpec, episodes_dir: Path, chunks: Sequence[Chunk], tally: Tally, guard: StopGuard,
             retries: int = RETRIES) -> None:
    """The chunks one after the other in this process; its program closed however it ends
    (a stop signal that comes while it closes is remembered by `guard`)."""
    runner = ChunkRunner(spec, episodes_dir, retries)
    try:
        for chunk in chunks:
            runner.run(chunk, tally.started, tally.ended, retried=lambda p, _: tally.retried(p, running=True))
    finally:
        guard.shield()
        runner.close()
