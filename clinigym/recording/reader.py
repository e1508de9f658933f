"""Reading episode recordings back, as typed records (`clinigym.core.recording_schema`).

Every reader of recordings (scoring, report, export, replay, validate, collect, review)
goes through `read_episode`. Recordings of format 1 (before the records were typed)
read the same.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from clinigym.core.errors import DataError
from clinigym.core.recording_schema import EpisodeHeader, EpisodeOutcome, StepRecord


@dataclass(frozen=True)
class Episode:
    """A recorded episode as read back from disk."""
    folder: Path
    header: EpisodeHeader
    steps: list[StepRecord]

    @property
    def outcome(self) -> EpisodeOutcome | None:
        return self.header.outcome

    @property
    def status(self) -> str | None:
        return self.header.outcome.status if self.header.outcome else None


def read_episode(folder: Path) -> Episode:
    folder = Path(folder)
    try:
        header = json.loads((folder / "episode.json").read_text())
        lines = (folder / "steps.jsonl").read_text(encoding="utf-8").splitlines()
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"{folder}: not a readable episode: {exc}") from None
    steps = []
    for i, line in enumerate(lines):
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break  # a line cut short by a kill: every finished step is before it
            raise DataError(f"{folder}/steps.jsonl: line {i + 1} is not JSON") from None
        steps.append(StepRecord.from_json(data, f"{folder}/steps.jsonl: line {i + 1}"))
    return Episode(folder, EpisodeHeader.from_json(header, f"{folder}/episode.json"), steps)


def episode_folders(run_dir: Path) -> list[Path]:
    run_dir = Path(run_dir)
    if (run_dir / "episode.json").exists():
        return [run_dir]
    return sorted(p.parent for p in run_dir.glob("**/episode.json"))
