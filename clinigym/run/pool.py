"""A pool of worker processes on this machine, each with its own program instance (its own
display, processes, container): `clinigym run --workers N`.

Workers are started with the `spawn` method (X clients and DevTools sockets do not survive
a fork) and take chunks (`schedule.partition`) one at a time from this process, the coordinator,
which prefers for each the chunk of the program it already runs (`schedule.next_chunk`). A
worker reports each episode's start and end over its pipe; the coordinator keeps the tally.

Stopping: the coordinator turns SIGINT and SIGTERM into RunStopped, sends SIGTERM to every
worker (which closes its program on the way out), gives them `GRACE` seconds, kills what is
left, and removes whatever a worker's processes, containers, display locks and work folders
left (`cleanup.sweep` of the workers' pids). A worker ignores SIGINT (a terminal sends it to
the whole process group; the coordinator decides) and gets SIGTERM from the kernel when the
coordinator dies, however it dies. A worker that dies mid-chunk is an infrastructure fault:
what it left is swept, and the episode it was running goes to a new worker with the rest of
its chunk, run again from its reset (its recording so far removed), unless it has had its
retries (`clinigym.run.episodes`: a worker's in-process retries, which it reports, count
too); then it is an infrastructure error (its recording, if any, ends with status "error").
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from clinigym.core.errors import ClinigymError
from clinigym.run.cleanup import sweep
from clinigym.run.episodes import RETRIES, ChunkRunner, Tally
from clinigym.run.resume import INFRASTRUCTURE, EpisodeError, discard, end_as_error, note_retries
from clinigym.run.schedule import Chunk, Planned, RunSpec, next_chunk, partition
from clinigym.run.stopping import STOP_SIGNALS, RunStopped, stop_on
from clinigym.runtime.backends import default_kind
from clinigym.runtime.backends.local import die_with_parent
from clinigym.runtime.slots import mark_owner
from clinigym.spec.apps import load_app
from clinigym.spec.paths import add_folder

GRACE = 8.0           # seconds a stopping worker has to close its program before it is killed
CLOSE_TIMEOUT = 60.0  # seconds a worker that ran out of work has to close its program


class WorkerError(ClinigymError):
    """Worker processes keep ending before they take any work."""


def worker_main(conn: Connection, spec_json: dict[str, Any], episodes_dir: str, parent: int,
                retries: int = RETRIES) -> None:
    """A worker: chunks (each with its episodes' earlier attempts) from `conn` until it gets
    None; its program closed however it ends."""
    die_with_parent(signal.SIGTERM)
    if os.getppid() != parent:       # the coordinator died before the line above
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    mark_owner()
    spec = RunSpec.from_json(spec_json)
    for folder in spec.search_path:
        add_folder(folder)
    runner = ChunkRunner(spec, Path(episodes_dir), retries)
    try:
        with stop_on(signal.SIGTERM) as guard:
            try:
                conn.send(("idle", None))
                while (work := conn.recv()) is not None:
                    chunk, earlier = work
                    runner.run(chunk, lambda p: conn.send(("start", p.number)),
                               lambda p, error: conn.send(("end", p.number, error)), earlier,
                               lambda p, attempt: conn.send(("retry", p.number, attempt)))
                    conn.send(("idle", runner.app))
            finally:
                guard.shield()
                runner.close()
    except RunStopped as stop:
        raise SystemExit(128 + stop.signum) from None   # quietly: the coordinator asked for it


@dataclass
class _Worker:
    pid: int
    process: BaseProcess
    conn: Connection
    app: str | None = None                                # the program its instance runs
    chunk: list[Planned] = field(default_factory=list)   # its chunk's episodes not ended yet
    running: Planned | None = None
    done: bool = False                                    # told that there is no more work


class Pool:
    def __init__(self, spec: RunSpec, episodes_dir: Path, tally: Tally, workers: int, retries: int = RETRIES):
        self.spec, self.episodes_dir, self.tally, self.size = spec, episodes_dir, tally, workers
        self.retries = retries
        self.attempts: dict[int, list[dict[str, Any]]] = {}   # episode number -> its attempts ended by a fault
        self.context = multiprocessing.get_context("spawn")
        self.workers: dict[int, _Worker] = {}
        self.started: set[int] = set()    # every worker's pid: what they own is swept at the end
        self.remaining: list[Chunk] = []
        self.deaths = 0     # workers that ended without running an episode, since the last episode ended
        self.containers = True

    def run(self, todo: Sequence[Planned]) -> None:
        self.remaining = partition(todo, self.size)
        self.containers = uses_containers(self.spec, {p.app for p in todo})
        with stop_on(*STOP_SIGNALS) as guard:
            try:
                for _ in range(min(self.size, len(self.remaining))):
                    self._start()
                while self.workers:
                    self._step()
            finally:
                guard.shield()
                self._shutdown(stopping=guard.signum is not None or bool(self.workers))
            guard.check()

    def _start(self) -> None:
        ours, theirs = self.context.Pipe()
        process = self.context.Process(target=worker_main, name="clinigym-worker", daemon=False,
                                       args=(theirs, self.spec.to_json(), str(self.episodes_dir), os.getpid(),
                                             self.retries))
        process.start()
        theirs.close()
        assert process.pid is not None   # started
        self.workers[process.pid] = _Worker(process.pid, process, ours)
        self.started.add(process.pid)

    def _step(self) -> None:
        by_handle: dict[Any, _Worker] = {}
        for w in self.workers.values():
            by_handle[w.conn] = w
            by_handle[w.process.sentinel] = w
        for handle in wait(list(by_handle)):
            w = by_handle[handle]
            if w.pid not in self.workers:
                continue      # handled through its other handle
            if handle is not w.conn or not self._receive(w):
                self._ended(w)

    def _receive(self, w: _Worker) -> bool:
        """Handle one message of a worker; False when its pipe is closed (it ended)."""
        try:
            message = w.conn.recv()
        except (EOFError, OSError):
            return False
        kind = message[0]
        if kind == "idle":
            w.app = message[1]
            self._give_work(w)
        elif kind == "start":
            w.running = next(p for p in w.chunk if p.number == message[1])
            self.tally.started(w.running)
        elif kind == "end":
            p = next(p for p in w.chunk if p.number == message[1])
            w.chunk.remove(p)
            w.running = None
            self.deaths = 0
            self.tally.ended(p, message[2])
        elif kind == "retry":
            self.attempts.setdefault(message[1], []).append(message[2])
            self.tally.retried(next(p for p in w.chunk if p.number == message[1]), running=True)
        return True

    def _give_work(self, w: _Worker) -> None:
        if not self.remaining:
            w.done = True
            w.conn.send(None)      # it closes its program and ends
            return
        others = Counter(o.app for o in self.workers.values() if o is not w and o.app and not o.done)
        chunk = self.remaining.pop(next_chunk(self.remaining, w.app, others))
        w.chunk, w.app = list(chunk.episodes), chunk.app
        w.conn.send((chunk, {p.number: self.attempts[p.number] for p in chunk.episodes if p.number in self.attempts}))

    def _ended(self, w: _Worker) -> None:
        """A worker process ended: when it was not told to, what it left is swept, the episode
        it was running is charged with an error and the rest of its chunk goes back."""
        try:
            while w.conn.poll() and self._receive(w):   # what it said before it ended
                pass
        except OSError:    # it ended while we answered it
            pass
        w.process.join(CLOSE_TIMEOUT)
        if w.process.is_alive():    # it closed its pipe but does not end
            w.process.kill()
            w.process.join()
        del self.workers[w.pid]
        w.conn.close()
        if w.done and w.process.exitcode == 0:
            return                  # no more work: it closed its program and ended
        sweep({w.pid}, containers=self.containers)
        if w.running is not None:
            self._lost(w, w.running)
        else:
            self.deaths += 1
            if self.deaths > self.size:
                raise WorkerError(f"worker processes keep ending before they run an episode (the last "
                                  f"with exit code {w.process.exitcode}; its error is above)")
        if w.chunk:
            self.remaining.insert(0, Chunk(w.chunk[0].app, tuple(w.chunk)))
        if self.remaining:
            self._start()

    def _lost(self, w: _Worker, p: Planned) -> None:
        """Episode `p` lost its worker: it stays at the head of the worker's chunk to run
        again, or, its retries spent, it is an infrastructure error."""
        reason = f"the worker process ended (exit code {w.process.exitcode}) during this episode"
        tries = self.attempts.setdefault(p.number, [])
        tries.append({"error": reason, "pid": w.pid})
        if len(tries) <= self.retries:
            discard(self.episodes_dir, p.number)
            self.tally.retried(p)
            return
        if tries[:-1]:
            note_retries(self.episodes_dir, p.number, tries[:-1])
        end_as_error(self.episodes_dir, p.number, f"{INFRASTRUCTURE}: {reason}")
        self.tally.ended(p, EpisodeError(p.number, p.key, p.episode, reason, pid=w.pid, cause=INFRASTRUCTURE))
        w.chunk.remove(p)

    def _shutdown(self, stopping: bool) -> None:
        """Every worker ended (asked to stop when `stopping`, else already told there is no
        more work), bounded; then whatever any of them left is swept."""
        if stopping:
            for w in self.workers.values():
                if w.process.is_alive():
                    os.kill(w.pid, signal.SIGTERM)
        deadline = time.monotonic() + (GRACE if stopping else CLOSE_TIMEOUT)
        for w in self.workers.values():
            w.process.join(max(0.0, deadline - time.monotonic()))
        for w in self.workers.values():
            if w.process.is_alive():
                w.process.kill()
                w.process.join(5)
            w.conn.close()
        self.workers.clear()
        sweep(self.started, containers=self.containers)


def uses_containers(spec: RunSpec, apps: set[str]) -> bool:
    """Whether any of the programs runs in a container (then a sweep asks the engine)."""
    return any((spec.backend or default_kind(load_app(app))) == "docker" for app in apps)
