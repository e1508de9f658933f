"""`clinigym soak` (`make soak`): a long `clinigym run` of the oracle with a pool of workers
over programs on both backends, while faults (`faults.FAULTS`) are injected from outside at
random moments: during resets, steps and the gaps between episodes. Afterwards it reads
what the run left:

- runner crashes: the run ended other than with its summary (exit status 0, or 1 when some
  episodes are infrastructure errors);
- episodes: every planned episode ended scored or as an infrastructure error (a fault ended
  every attempt of it: `clinigym.run.episodes` retries the others), and the oracle's metrics
  over the scored ones are 100%, as without faults; each infrastructure error has a fault
  injected into its worker while it ran or just before it started ("unexplained" counts the
  others); the counts of scored, infrastructure errors and retried episodes;
- lost steps: every step line of every recording parses and its screenshots are readable
  PNG files (a line cut short by a kill is a step that did not finish, counted apart);
- leftovers: processes, displays, display locks, work folders and containers the run
  started that are still there once it has ended;
- memory: the machine's used memory through the run, flat when its last tenth is within
  `FLAT_MB` (or 10%) of its second tenth (the first is warm-up).
"""
from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from clinigym.bench.faults import FAULTS, TargetGone, find_target, workers
from clinigym.bench.footprint import Footprint
from clinigym.bench.soak_check import Verdict, check_run
from clinigym.recording.writer import episode_number

MIX = ["dicomscope/medspot-01-flip", "dicomscope/medspot-02-rotate", "dicomscope/medspot-06-fit-zoom-1-1",
       "dicomscope/medspot-19-pan-sliders", "orthanc/info-accession-number", "orthanc/info-birth-date",
       "orthanc/info-patient-id", "orthanc/medspot-02-enable-interpolation", "itksnap/info-slice-count",
       "itksnap/medspot-07-zoom-1x", "itksnap/medspot-10-select-label-2", "itksnap/medspot-19-volumes-statistics"]
TICK = 0.2            # seconds between looks at the run
SAMPLE_EVERY = 5.0    # seconds between memory samples
DEFER = 20.0          # seconds a fault waits for a target it applies to before the next kind is tried


@dataclass
class Injection:
    at: float                     # seconds since the run started
    kind: str
    worker: int
    what: str
    running: int | None           # the episode the worker was running, by number
    seen: set[int] = field(default_factory=set)     # episodes that had begun by then
    next: int | None = None       # with none running: the next episode the worker began


class Episodes:
    """What the run folder says so far: per episode number, the pid that ran it and whether it
    has ended (finished recordings are not read again)."""

    def __init__(self, out: Path):
        self.out = out
        self.pid: dict[int, int | None] = {}
        self.ended: set[int] = set()
        self._errors_read = 0

    def refresh(self) -> None:
        folder = self.out / "episodes"
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            number = episode_number(path)
            if number is None or number in self.ended:
                continue
            try:
                header = json.loads((path / "episode.json").read_text())
            except (OSError, ValueError):   # being written
                continue
            self.pid[number] = header.get("pid")
            if header.get("outcome"):
                self.ended.add(number)
        try:
            lines = (self.out / "errors.jsonl").read_text().splitlines()
        except OSError:
            lines = []
        for line in lines[self._errors_read:]:
            try:
                error = json.loads(line)
            except ValueError:            # being written
                break
            self.pid.setdefault(error["number"], error.get("pid"))
            self.ended.add(error["number"])
            self._errors_read += 1

    def running(self, pid: int) -> int | None:
        found = [n for n, p in self.pid.items() if p == pid and n not in self.ended]
        return max(found) if found else None


class Injector(threading.Thread):
    """Injects `faults` faults spread over the run's progress, each at a random moment after
    its turn comes, into a random worker; samples memory and records the run's footprint."""

    def __init__(self, proc: subprocess.Popen, out: Path, total: int, faults: int, seed: int,
                 stop_seconds: float, engine=None):
        super().__init__(daemon=True)
        self.proc, self.out, self.total, self.faults = proc, out, total, faults
        self.rng = random.Random(seed)
        self.stop_seconds, self.engine = stop_seconds, engine
        self.episodes = Episodes(out)
        self.footprint = Footprint(proc.pid, engine)
        self.injections: list[Injection] = []
        self.memory: list[tuple[float, int, float]] = []   # (seconds, episodes ended, used MB)
        self.errors: list[str] = []
        self.t0 = time.monotonic()

    def run(self) -> None:
        try:
            self._loop()
        except Exception as exc:   # noqa: BLE001 - reported with the soak's results, never silent
            self.errors.append(f"{type(exc).__name__}: {exc}")

    def _loop(self) -> None:
        kinds = list(FAULTS)
        self.rng.shuffle(kinds)
        due: float | None = None        # when the next fault comes, once its turn has come
        tried_since: float | None = None
        last_sample = -SAMPLE_EVERY
        while self.proc.poll() is None:
            time.sleep(TICK)
            now = time.monotonic() - self.t0
            self.episodes.refresh()
            self._resolve_next()
            if now - last_sample >= SAMPLE_EVERY:
                self.footprint.record()
                self.memory.append((round(now, 1), len(self.episodes.ended), round(used_mb(), 1)))
                last_sample = now
            n = len(self.injections)
            if n >= self.faults:
                continue
            if due is None:
                # Its turn: once its share of the episodes has ended; then a random 0-4 s, so
                # that it lands anywhere in an episode (reset, step, the gap after it).
                if len(self.episodes.ended) >= math.floor((n + 0.5) * self.total / self.faults):
                    due = now + self.rng.uniform(0, 4)
                continue
            if now < due:
                continue
            tried_since = now if tried_since is None else tried_since
            kind = kinds[n % len(kinds)]
            if self._inject(kind, now):
                due = tried_since = None
            elif now - tried_since > DEFER:     # nothing it applies to now: its turn goes later
                kinds.append(kinds.pop(n % len(kinds)))
                tried_since = None

    def _inject(self, kind: str, now: float) -> bool:
        fault = FAULTS[kind]
        found = workers(self.proc.pid)
        pool = found != [self.proc.pid]
        targets = [t for w in found if (t := find_target(w, self.engine)) and fault.applies(t, pool)]
        if not targets:
            return False
        target = self.rng.choice(targets)
        self.footprint.record()      # what it started, before a part of it is killed
        running = self.episodes.running(target.worker)
        try:
            what = fault.inject(target, self.rng, self.stop_seconds)
        except TargetGone:
            return False
        self.injections.append(Injection(round(now, 2), kind, target.worker, what, running,
                                         set(self.episodes.pid)))
        return True

    def _resolve_next(self) -> None:
        for i in self.injections:
            if i.running is None and i.next is None:
                later = [n for n, p in self.episodes.pid.items() if p == i.worker and n not in i.seen]
                i.next = min(later) if later else None


def used_mb() -> float:
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return (int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])) / 1024


@dataclass
class SoakResult:
    seconds: float
    returncode: int
    injections: list[Injection]
    verdict: Verdict
    memory: list[tuple[float, int, float]]
    injector_errors: list[str]

    def to_json(self) -> dict:
        return {"seconds": round(self.seconds, 1), "returncode": self.returncode,
                "verdict": asdict(self.verdict),
                "injections": [{k: v for k, v in asdict(i).items() if k != "seen"} for i in self.injections],
                "memory": self.memory, "injector_errors": self.injector_errors}


def soak(out: Path, episodes: int, faults: int, workers_n: int, seed: int, mix: list[str] = MIX,
         progress: bool = True) -> SoakResult:
    from clinigym.spec.apps import load_app
    from clinigym.spec.scenarios import select
    scenarios = list({s.key: s for pattern in mix for s in select(pattern)}.values())
    per = max(1, math.ceil(episodes / len(scenarios)))
    total = per * len(scenarios)
    stop_seconds = max(load_app(s.app).settle.timeout for s in scenarios) + 2
    engine = _engine({s.app for s in scenarios})
    argv = [sys.executable, "-m", "clinigym.cli", "run", "--scenario", *mix, "--agent", "oracle", "--episodes",
            str(per), "--seed", str(seed), "--workers", str(workers_n), "--out", str(out), "--overwrite"]
    if not progress:
        argv.append("--no-progress")
    t = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)   # its progress bar and errors: stderr
    injector = Injector(proc, out, total, faults, seed, stop_seconds, engine)
    injector.start()
    proc.wait()
    seconds = time.monotonic() - t
    injector.join()
    left = injector.footprint.gone_within(30)
    verdict = check_run(out, total, proc.returncode, injector.injections, left, injector.memory)
    return SoakResult(seconds, proc.returncode, injector.injections, verdict, injector.memory, injector.errors)


def _engine(apps: set[str]):
    """A Docker client when a program of the mix runs in containers (else None)."""
    from clinigym.runtime.backends import default_kind
    from clinigym.spec.apps import load_app
    if all(default_kind(load_app(a)) != "docker" for a in apps):
        return None
    from clinigym.runtime.images import engine
    return engine()
