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
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from clinigym._version import __version__
from clinigym.core.records import EpisodeHeader, EpisodeOutcome, StepRecord


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


def new_episode(record_dir: Path, name: str, header: EpisodeHeader) -> EpisodeRecorder:
    """A recorder in `record_dir/<NNNN>-<name>/`, numbered after the folders already there;
    the header gets the start time and clinigym's version."""
    record_dir = Path(record_dir)
    record_dir.mkdir(parents=True, exist_ok=True)
    numbers = [int(p.name[:4]) for p in record_dir.iterdir() if p.name[:4].isdigit()]
    folder = record_dir / f"{max(numbers, default=0) + 1:04d}-{name}"
    header.started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    header.versions = {"clinigym": __version__, **header.versions}
    return EpisodeRecorder(folder, header)
