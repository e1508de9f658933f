"""A run's episodes over a Ray cluster (`clinigym run --ray [ADDRESS]`; Ray is the optional
extra `clinigym[ray]`).

One actor per worker, spread over the nodes; each runs its episodes on program instances
of its own node (its own displays, processes, containers, images), with the code a pool
worker runs (`ChunkRunner`), and keeps an instance across episodes of the same program.
The driver (this process) hands out the same chunks as the local pool (`schedule.partition`,
`schedule.next_chunk`) one episode at a time, and each episode's recording comes back to it
as an archive through Ray's object store, so the run folder is written on the driver's
machine alone.

An actor that dies (its process killed, its node lost) is an infrastructure fault: the
episode it ran goes to a new actor, run again from its reset, as long as it has retries
left (`clinigym.run.episodes`: `retries` + 1 runs in all, the actor's own retries of an
episode whose program, display or container died counted with its actors' deaths); every
attempt an actor's death ended is noted in the episode's header (`extra["ray"]["retries"]`,
all of them in `extra["retries"]`); after the last it is an infrastructure error. What the
dead actor left on its node is swept by a task pinned there. SIGINT and SIGTERM kill every actor at once and sweep
what each started on its node (bounded by `GRACE`).

Ray binds to the machine's external address unless its nodes see only loopback: on one
machine, start the cluster in a network namespace with only `lo` (see docs/guides/many-episodes.md).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import sys
import tarfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clinigym.core.errors import ClinigymError
from clinigym.recording.writer import episode_number, write_json_atomic
from clinigym.run.cleanup import sweep
from clinigym.run.episodes import RETRIES, Attempts, ChunkRunner, Tally
from clinigym.run.resume import INFRASTRUCTURE, EpisodeError
from clinigym.run.schedule import Chunk, Planned, RunSpec, next_chunk, partition
from clinigym.run.stopping import STOP_SIGNALS, RunStopped, stop_on
from clinigym.runtime import slots
from clinigym.runtime.waiting import poll
from clinigym.spec.paths import add_folder

GRACE = 20.0         # seconds actors have to close their programs when the run ends or stops


class RayError(ClinigymError):
    """Ray is missing, no cluster answers, or actors keep dying."""


def _ray():
    try:
        import ray
    except ImportError:
        raise RayError("--ray needs Ray: pip install 'clinigym[ray]'") from None
    return ray


class EpisodeWorker:
    """What runs in an actor: episodes on this node, each returned as an archive."""

    def __init__(self, spec_json: dict[str, Any], retries: int = RETRIES):
        slots.mark_owner()   # what it starts is its own, for a sweep after it dies
        spec = RunSpec.from_json(spec_json)
        for folder in spec.search_path:
            add_folder(folder)
        self.slot = slots.claim("ray", None, [])
        self.runner = ChunkRunner(spec, self.slot.workdir / "episodes", retries)

    def where(self) -> dict[str, Any]:
        import ray
        return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "pid": os.getpid()}

    def run(self, p: Planned, earlier: Attempts) -> tuple[bytes, EpisodeError | None]:
        errors: list[EpisodeError | None] = []
        self.runner.run(Chunk(p.app, (p,)), lambda _: None, lambda _, error: errors.append(error), earlier)
        return pack_episode(self.runner.episodes_dir, p.number), errors[0]

    def close(self) -> None:
        self.runner.close()
        shutil.rmtree(self.slot.workdir, ignore_errors=True)


def pack_episode(episodes_dir: Path, number: int) -> bytes:
    """Episode `number`'s folder (none when it failed before recording) as an archive, and
    the folder removed."""
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for folder in episodes_dir.glob(f"{number:04d}-*"):
            tar.add(folder, arcname=folder.name)
            shutil.rmtree(folder)
    return archive.getvalue()


def unpack_episode(archive: bytes, episodes_dir: Path, number: int, ray: dict[str, Any]) -> None:
    """An archive from `pack_episode` into `episodes_dir`, its header given `extra.ray`."""
    if not archive:
        return
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = tar.getmembers()
        # Only files and folders of this episode (no links, no way out of the run folder).
        for m in members:
            path = Path(m.name)
            if (path.is_absolute() or ".." in path.parts or not (m.isfile() or m.isdir())
                    or path.parts[0] != Path(members[0].name).parts[0] or episode_number(path.parts[0]) != number):
                raise RayError(f"episode {number}: its archive holds {m.name!r}, not only its own folder")
        tar.extractall(episodes_dir, members=members)
    for folder in episodes_dir.glob(f"{number:04d}-*"):
        header = folder / "episode.json"
        data = json.loads(header.read_text())
        data.setdefault("extra", {})["ray"] = ray
        write_json_atomic(header, data)


def _sweep_pids(pids: list[int]) -> list[str]:
    """On an actor's node: once the actors are gone (a killed actor may still be starting a
    program for a moment, `ray.kill` being asynchronous), remove what they started."""
    poll(lambda: not any(slots.pid_alive(p) for p in pids), GRACE / 2)
    return sweep(set(pids))


@dataclass
class _Actor:
    handle: Any
    where: dict[str, Any]
    app: str | None = None
    chunk: list[Planned] = field(default_factory=list)
    running: Any = None         # the ObjectRef of its episode in flight


class RayRun:
    """The driver: episodes to actors, archives back into `episodes_dir`."""

    def __init__(self, spec: RunSpec, episodes_dir: Path, tally: Tally, workers: int, address: str | None,
                 retries: int = RETRIES):
        self.ray = _ray()
        self.spec, self.episodes_dir, self.tally, self.size = spec, episodes_dir, tally, workers
        self.max_attempts = retries + 1
        self.address = address or "auto"
        self.actors: list[_Actor] = []
        self.remaining: list[Chunk] = []
        self.retries: dict[int, list[dict[str, Any]]] = {}
        self.sweeps: list[Any] = []              # tasks removing what dead actors left
        self.remote: Any = None                  # the actor class, once Ray is up

    def run(self, todo: Sequence[Planned]) -> None:
        # Ray prints what its nodes report (a worker that died) on stdout, where `--json` goes.
        with contextlib.redirect_stdout(sys.stderr):
            self._run(todo)

    def _run(self, todo: Sequence[Planned]) -> None:
        ray = self.ray
        _answers(self.address)
        try:
            ray.init(address=self.address, logging_level="ERROR", log_to_driver=False)
        except (ConnectionError, RuntimeError) as exc:
            raise RayError(f"no Ray cluster at {self.address}: {exc}") from None
        self.remaining = partition(todo, self.size)
        self.remote = ray.remote(num_cpus=1, max_restarts=0)(EpisodeWorker)
        with stop_on(*STOP_SIGNALS) as guard:
            try:
                for _ in range(min(self.size, len(self.remaining))):
                    self._start()
                while any(a.running is not None for a in self.actors):
                    self._step()
            except KeyboardInterrupt:
                # Ray's wait turns the stop our handler raised into a plain KeyboardInterrupt.
                if guard.signum is None:
                    raise
                raise RunStopped(guard.signum) from None
            finally:
                guard.shield()
                self._shutdown(stopping=guard.signum is not None)
                ray.shutdown()
            guard.check()

    def _start(self) -> None:
        handle = self.remote.options(scheduling_strategy="SPREAD").remote(self.spec.to_json(),
                                                                          self.max_attempts - 1)
        try:
            where = self.ray.get(handle.where.remote(), timeout=120)
        except self.ray.exceptions.RayError as exc:
            raise RayError(f"a Ray actor could not start: {exc}") from None
        actor = _Actor(handle, where)
        self.actors.append(actor)
        self._next(actor)

    def _next(self, a: _Actor) -> None:
        """Give an actor its chunk's next episode, or a new chunk, or nothing."""
        if not a.chunk and self.remaining:
            others = Counter(o.app for o in self.actors if o is not a and o.app and o.chunk)
            chunk = self.remaining.pop(next_chunk(self.remaining, a.app, others))
            a.chunk, a.app = list(chunk.episodes), chunk.app
        if a.chunk:
            p = a.chunk[0]
            self.tally.started(p)
            a.running = a.handle.run.remote(p, {p.number: self.retries[p.number]} if p.number in self.retries else {})
        else:
            a.running = None

    def _step(self) -> None:
        running = {a.running: a for a in self.actors if a.running is not None}
        # Bounded, so that a stop signal is taken within half a second, not after an episode.
        ready, _ = self.ray.wait(list(running), num_returns=1, timeout=0.5)
        if not ready:
            return
        a = running[ready[0]]
        p = a.chunk[0]
        try:
            archive, error = self.ray.get(ready[0])
        except (self.ray.exceptions.RayActorError, self.ray.exceptions.ActorUnavailableError) as exc:
            self._died(a, p, exc)
            return
        except self.ray.exceptions.RayError as exc:   # a fault of the episode, not of its actor
            archive, error = b"", EpisodeError(p.number, p.key, p.episode, _first_line(exc))
        a.chunk.pop(0)
        unpack_episode(archive, self.episodes_dir, p.number,
                       {"node": a.where["node"], "retries": self.retries.get(p.number, [])})
        self.tally.ended(p, error)
        self._next(a)

    def _died(self, a: _Actor, p: Planned, exc: Exception) -> None:
        """Its episode goes to a new actor with the rest of its chunk, unless it has had
        all its attempts; what the actor left on its node is swept there."""
        self.actors.remove(a)
        self._sweep(a)
        tries = self.retries.setdefault(p.number, [])
        tries.append({"node": a.where["node"], "host": a.where["host"], "error": _first_line(exc)})
        if len(tries) >= self.max_attempts:
            a.chunk.pop(0)
            reason = f"its Ray actor died in each of {self.max_attempts} attempts; the last: {tries[-1]['error']}"
            self.tally.ended(p, EpisodeError(p.number, p.key, p.episode, reason, cause=INFRASTRUCTURE))
        else:
            self.tally.retried(p)
        if a.chunk:
            self.remaining.insert(0, Chunk(a.app or p.app, tuple(a.chunk)))
        if self.remaining:
            self._start()

    def _shutdown(self, stopping: bool) -> None:
        """Run out of work: every actor closes its programs (bounded by `GRACE`), then is
        killed. Stopping: every actor is killed at once, mid-episode or not. Either way,
        what a killed actor had not closed, and what dead ones left, is swept on its node
        (if that node still answers)."""
        ray = self.ray
        closing = {} if stopping else {a.handle.close.remote(): a for a in self.actors}
        closed, _ = ray.wait(list(closing), num_returns=len(closing), timeout=GRACE) if closing else ([], [])
        done = {id(closing[ref]) for ref in closed}
        for a in self.actors:
            ray.kill(a.handle)
            if id(a) not in done:
                self._sweep(a)
        self.actors.clear()
        if self.sweeps:
            ray.wait(self.sweeps, num_returns=len(self.sweeps), timeout=GRACE)

    def _sweep(self, a: _Actor) -> None:
        """Remove what an actor that died (or did not close) left, by a task on its node."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        on_node = NodeAffinitySchedulingStrategy(a.where["node"], soft=False)
        self.sweeps.append(self.ray.remote(num_cpus=0)(_sweep_pids).options(scheduling_strategy=on_node)
                           .remote([a.where["pid"]]))


def _answers(address: str) -> None:
    """Refuse at once an address where nothing listens (Ray itself keeps trying for minutes)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "://" in address:
        return      # "auto", or a client address: Ray's own answer is quick
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise RayError(f"no Ray cluster answers at {address}: {exc}") from None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
