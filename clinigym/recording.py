"""Episode recordings: written as they happen, readable after a crash.

Layout of one episode folder::

    episode.json          scenario, program, versions, seed, sizes; `outcome` once it ends
    steps.jsonl           one JSON object per action, appended and fsynced as it happens
    step-000-before.png   the observation the agent acted on
    step-000-after.png    the settled observation after the action

PNG files of a step are written before its JSONL line, so every line that is
on disk has its images. A run folder holds `episodes/<NNNN>-<app>-<id>/`
folders and the run's `summary.json`.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

FORMAT_VERSION = 1


def _write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=_jsonable))
    os.replace(tmp, path)


def _jsonable(value: Any):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot record {type(value).__name__}")


def save_png(path: Path, rgb: np.ndarray) -> None:
    Image.fromarray(rgb).save(path, compress_level=1)


class EpisodeRecorder:
    def __init__(self, folder: Path, header: dict):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=False)
        self.header = {"format": FORMAT_VERSION, **header}
        _write_json_atomic(self.folder / "episode.json", self.header)
        self._steps = open(self.folder / "steps.jsonl", "a", encoding="utf-8")
        self.count = 0

    def step(self, record: dict, before: np.ndarray, after: np.ndarray | None) -> None:
        n = self.count
        record = dict(record, t=n, before=f"step-{n:03d}-before.png")
        save_png(self.folder / record["before"], before)
        if after is not None:
            record["after"] = f"step-{n:03d}-after.png"
            save_png(self.folder / record["after"], after)
        self._steps.write(json.dumps(record, default=_jsonable) + "\n")
        self._steps.flush()
        os.fsync(self._steps.fileno())
        self.count += 1

    def finish(self, outcome: dict) -> None:
        if self._steps.closed:
            return
        self._steps.close()
        self.header["outcome"] = outcome
        _write_json_atomic(self.folder / "episode.json", self.header)


def new_episode(record_dir: Path, name: str, header: dict) -> EpisodeRecorder:
    """A recorder in `record_dir/<NNNN>-<name>/`, numbered after the folders already there."""
    record_dir = Path(record_dir)
    record_dir.mkdir(parents=True, exist_ok=True)
    numbers = [int(p.name[:4]) for p in record_dir.iterdir() if p.name[:4].isdigit()]
    folder = record_dir / f"{max(numbers, default=0) + 1:04d}-{name}"
    from clinigym import __version__
    header = {**header, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "versions": {"clinigym": __version__, **header.get("versions", {})}}
    return EpisodeRecorder(folder, header)


@dataclass(frozen=True)
class Episode:
    """A recorded episode as read back from disk."""
    folder: Path
    header: dict
    steps: list[dict]

    @property
    def outcome(self) -> dict | None:
        return self.header.get("outcome")


def read_episode(folder: Path) -> Episode:
    folder = Path(folder)
    header = json.loads((folder / "episode.json").read_text())
    steps = []
    lines = (folder / "steps.jsonl").read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        try:
            steps.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break  # a line cut short by a kill: every finished step is before it
            raise
    return Episode(folder, header, steps)


def episode_folders(run_dir: Path) -> list[Path]:
    run_dir = Path(run_dir)
    if (run_dir / "episode.json").exists():
        return [run_dir]
    return sorted(p.parent for p in run_dir.glob("**/episode.json"))
