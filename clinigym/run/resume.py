"""A run folder's bookkeeping, so that a killed run can be continued (`clinigym run --resume`).

    run.json        the run's parameters (`RunSpec`) and provenance, written before the first episode
    errors.jsonl    one line per episode that could not be run (its number, the error)
    episodes/       the recordings; an episode ended when its episode.json has an outcome

An episode is done when its recording has an outcome, or when it failed before anything
was recorded (its error is in errors.jsonl and it has no folder). One cut off by a kill
(a folder without an outcome) is run again from its reset: its folder is removed first,
so that it is not scored twice, and so is an error it had. So is an episode that ended by
an infrastructure fault after its retries (`clinigym.run.episodes`: its model server stopped
answering, its worker, display, container or program was killed, its reset kept failing: a
recording with status "error", or an error with a `cause`, e.g. not run at all): a resume
runs it again.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from clinigym.core.errors import DataError
from clinigym.core.recording_schema import EpisodeOutcome
from clinigym.recording.writer import episode_number, write_json_atomic
from clinigym.run.schedule import Planned, RunSpec

RUN_FILE = "run.json"
ERRORS_FILE = "errors.jsonl"


@dataclass(frozen=True)
class EpisodeError:
    """An episode that could not be run."""
    number: int
    scenario: str
    episode: int
    error: str
    traceback: str = ""
    pid: int | None = None      # the process that ran it (as a recording's header says)
    cause: str | None = None    # an infrastructure fault (INFRASTRUCTURE, SERVER_*); None: the episode's own

    def summary(self) -> dict[str, object]:
        """As `summary.json` lists it."""
        return {"scenario": self.scenario, "episode": self.episode, "error": self.error,
                "traceback": self.traceback, **({"cause": self.cause} if self.cause else {})}


SERVER_FAILED = "model server unavailable"   # the episode's request went unanswered: it ended there
SERVER_DOWN = "model server down"            # not run: the run had stopped asking a dead server
INFRASTRUCTURE = "infrastructure"            # its worker, display, container or program died, or its reset failed


@dataclass(frozen=True)
class Survey:
    """What the episode folders of a run say."""
    finished: frozenset[int]      # numbers of the episodes whose recording has an outcome
    partial: tuple[Path, ...]     # folders of episodes cut off before their outcome


def write_spec(out: Path, spec: RunSpec, provenance: dict[str, Any] | None = None) -> None:
    """run.json: the run's parameters, and its provenance (`clinigym.run.provenance`)."""
    write_json_atomic(out / RUN_FILE, spec.to_json() | ({"provenance": provenance} if provenance else {}))


def read_spec(out: Path) -> RunSpec:
    try:
        return RunSpec.from_json(json.loads((out / RUN_FILE).read_text()))
    except FileNotFoundError:
        raise DataError(f"{out}: no {RUN_FILE}: not a run folder of `clinigym run` that can be resumed") from None
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise DataError(f"{out / RUN_FILE}: cannot be read: {exc}") from None


def append_error(out: Path, error: EpisodeError) -> None:
    with open(out / ERRORS_FILE, "a", encoding="utf-8") as f:
        f.write(json.dumps(asdict(error)) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_errors(out: Path) -> list[EpisodeError]:
    """The errors recorded so far, by episode number (a line cut short by a kill is left out)."""
    try:
        lines = (out / ERRORS_FILE).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    errors = []
    for line in lines:
        try:
            errors.append(EpisodeError(**json.loads(line)))
        except (ValueError, TypeError):
            continue
    return sorted(errors, key=lambda e: e.number)


def survey(episodes_dir: Path) -> Survey:
    finished, partial = set(), []
    for folder in sorted(episodes_dir.iterdir()) if episodes_dir.is_dir() else []:
        number = episode_number(folder)
        if number is None or not folder.is_dir():
            continue
        try:
            outcome = json.loads((folder / "episode.json").read_text()).get("outcome")
        except (OSError, ValueError):
            outcome = None     # killed before its header was written
        ended = isinstance(outcome, dict) and outcome.get("status") != "error"
        if ended:
            finished.add(number)
        else:
            partial.append(folder)
    return Survey(frozenset(finished), tuple(partial))


def pending(planned: Sequence[Planned], found: Survey,
            errors: Sequence[EpisodeError]) -> tuple[list[Planned], list[EpisodeError]]:
    """(the episodes still to run, the errors that stand): see the module's docstring."""
    cut = {episode_number(f) for f in found.partial}
    kept = [e for e in errors if e.number not in cut and e.cause is None]
    done = found.finished | {e.number for e in kept}
    return [p for p in planned if p.number not in done], kept


def prepare_resume(out: Path, planned: Sequence[Planned]) -> list[Planned]:
    """Clear what a killed run cut off and return the episodes still to run."""
    found = survey(out / "episodes")
    todo, kept = pending(planned, found, read_errors(out))
    for folder in found.partial:
        shutil.rmtree(folder)
    tmp = out / (ERRORS_FILE + ".tmp")
    tmp.write_text("".join(json.dumps(asdict(e)) + "\n" for e in kept), encoding="utf-8")
    os.replace(tmp, out / ERRORS_FILE)
    return todo


def end_as_error(episodes_dir: Path, number: int, reason: str) -> None:
    """Mark the recording of an episode (ended, or cut off by its worker's death) as ended
    by an infrastructure fault (status "error": in no metric, run again by a resume)."""
    for folder, data in _headers(episodes_dir, number):
        data["outcome"] = EpisodeOutcome("error", reason=reason, extra={"cause": INFRASTRUCTURE}).to_json()
        write_json_atomic(folder / "episode.json", data)


def ended_cause(episodes_dir: Path, number: int) -> tuple[str | None, str | None]:
    """(the cause, the reason) in the outcome of episode `number`'s recording; (None, None)
    without one."""
    for _, data in _headers(episodes_dir, number):
        outcome = data.get("outcome") or {}
        return outcome.get("cause"), outcome.get("reason")
    return None, None


def note_retries(episodes_dir: Path, number: int, retries: Sequence[dict[str, Any]]) -> None:
    """Note the earlier attempts of episode `number` in its recording's header
    (`extra["retries"]`: each one's error and process)."""
    for folder, data in _headers(episodes_dir, number):
        data.setdefault("extra", {})["retries"] = list(retries)
        write_json_atomic(folder / "episode.json", data)


def discard(episodes_dir: Path, number: int) -> None:
    """Remove the recording of an attempt of episode `number`, before it is run again."""
    for folder in episodes_dir.glob(f"{number:04d}-*"):
        shutil.rmtree(folder)


def _headers(episodes_dir: Path, number: int) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The recording of episode `number`: its folder and header (none unless readable)."""
    for folder in episodes_dir.glob(f"{number:04d}-*"):
        try:
            data = json.loads((folder / "episode.json").read_text())
        except (OSError, ValueError):   # killed before its header was written
            continue
        yield folder, data


@contextmanager
def holding(out: Path) -> Iterator[None]:
    """Hold the run folder for this run: a second run (or resume) in it is refused while
    this one lives (the lock goes with the process, however it ends)."""
    fd = os.open(out, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DataError(f"{out}: another run is writing to this folder") from None
        yield
    finally:
        os.close(fd)
