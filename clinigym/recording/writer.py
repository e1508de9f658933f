"""Writing episode recordings: as they happen, readable after a crash.

Layout of one episode folder::

    episode.json          the EpisodeHeader (scenario, program, versions, seed, sizes); its
                          `outcome` once the episode ends
    steps.jsonl           one StepRecord per action, appended and fsynced as it happens
    step-000-before.png   the observation the agent acted on
    step-000-after.png    the settled observation after the action

PNG files of a step are written before its JSONL line, so every line that is on disk
has its images. A run folder holds `episodes/<NNNN>-<app>-<id>/` folders and the run's
`summary.json`. Both environments record through `EpisodeRecorder`, the one writer.

Episode numbers: the runner gives each episode its number up front (`numbered`), so that
episodes recorded by several processes at once never collide and are numbered the same
whichever finishes first; otherwise the next number after the folders already there,
taken under a lock on the folder.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from clinigym._version import __version__
from clinigym.core.errors import DataError
from clinigym.core.recording_schema import EpisodeHeader, EpisodeOutcome, StepRecord

_NUMBER: ContextVar[int | None] = ContextVar("clinigym_episode_number", default=None)


def _jsonable(value: Any):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot record {type(value).__name__}")


def write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=_jsonable))
    os.replace(tmp, path)


def save_png(path: Path, rgb: np.ndarray) -> None:
    Image.fromarray(rgb).save(path, compress_level=1)


class EpisodeRecorder:
    """One episode folder: the header now, each step as it happens, the outcome at the end."""

    def __init__(self, folder: Path, header: EpisodeHeader):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=False)
        self.header = header
        write_json_atomic(self.folder / "episode.json", header.to_json())
        self._steps = open(self.folder / "steps.jsonl", "a", encoding="utf-8")
        self.count = 0

    def step(self, record: StepRecord, before: np.ndarray, after: np.ndarray | None) -> None:
        n = self.count
        record.t, record.before = n, f"step-{n:03d}-before.png"
        save_png(self.folder / record.before, before)
        if after is not None:
            record.after = f"step-{n:03d}-after.png"
            save_png(self.folder / record.after, after)
        self._steps.write(json.dumps(record.to_json(), default=_jsonable) + "\n")
        self._steps.flush()
        os.fsync(self._steps.fileno())
        self.count += 1

    @property
    def finished(self) -> bool:
        return self._steps.closed

    def finish(self, outcome: EpisodeOutcome) -> None:
        if self._steps.closed:
            return
        self._steps.close()
        self.header.outcome = outcome
        write_json_atomic(self.folder / "episode.json", self.header.to_json())


def episode_number(folder: Path | str) -> int | None:
    """The number of an episode folder (`<NNNN>-<app>-<id>`), None for another name."""
    found = re.match(r"(\d+)-", Path(folder).name)
    return int(found.group(1)) if found else None


@contextmanager
def numbered(number: int) -> Iterator[None]:
    """The episode recorded inside gets folder number `number`."""
    token = _NUMBER.set(number)
    try:
        yield
    finally:
        _NUMBER.reset(token)


def new_episode(record_dir: Path, name: str, header: EpisodeHeader) -> EpisodeRecorder:
    """A recorder in `record_dir/<NNNN>-<name>/`: the number given by `numbered`, else the one
    after the folders already there; the header gets the start time and clinigym's version."""
    record_dir = Path(record_dir)
    record_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(record_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)   # one writer numbers at a time, across processes
        taken = {n: p for p in record_dir.iterdir() if (n := episode_number(p)) is not None}
        number = _NUMBER.get()
        if number is None:
            number = max(taken, default=0) + 1
        elif number in taken:
            raise DataError(f"{record_dir}: episode number {number} is {taken[number].name} already")
        header.started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        header.versions = {"clinigym": __version__, **header.versions}
        return EpisodeRecorder(record_dir / f"{number:04d}-{name}", header)
    finally:
        os.close(fd)
