"""Recorded episodes out as datasets: MedSPOT format (annotation JSON plus the
pre-action keyframes as PNG) and a Hugging Face `datasets` parquet file (one row
per step, the keyframe as an image column) for training."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from clinigym.recording import Episode, episode_folders, read_episode
from clinigym.spec.medspot import GroundTruth, MedspotStep, MedspotTask, write_dataset


def _episodes(run_dirs: list[Path], complete_only: bool) -> list[Episode]:
    eps = [read_episode(f) for d in run_dirs for f in episode_folders(Path(d))]
    if complete_only:
        eps = [e for e in eps if e.status == "complete"]
    return eps


def percent_box(box: list[float], width: int, height: int) -> tuple[float, float, float, float]:
    """A pixel box [x1, y1, x2, y2] as MedSPOT's percent [x, y, w, h]."""
    x1, y1, x2, y2 = box
    return (x1 / width * 100, y1 / height * 100, (x2 - x1) / width * 100, (y2 - y1) / height * 100)


def to_medspot(run_dirs: list[Path], out: Path, complete_only: bool = True) -> list[MedspotTask]:
    """Write a MedSPOT-format dataset of the recorded episodes; one task per episode,
    one annotation file per program (each task's `extra["clinigym"]` names its scenario, and
    a task family's instance and split). Returns the tasks written."""
    out = Path(out)
    tasks: list[MedspotTask] = []
    counters: dict[str, int] = {}
    for ep in _episodes(run_dirs, complete_only):
        h = ep.header
        software = h.app
        width, height = h.coordinates["observation_size"]
        index = counters.get(software, 0)
        counters[software] = index + 1
        steps = []
        for rec in ep.steps:
            if rec.target_box is None:
                continue
            image = f"Images/{software}/{ep.folder.name}-{rec.t:03d}.png"
            (out / image).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ep.folder / rec.before, out / image)
            gt = GroundTruth(rec.expected_action, h.steps[rec.step]["instruction"],
                             percent_box(rec.target_box, width, height))
            steps.append(MedspotStep(len(steps) + 1, image, rec.instruction, (gt,)))
        given: dict[str, Any] = {"scenario": h.scenario, "episode": ep.folder.name, "image_size": [width, height]}
        if h.instance is not None:   # a task family's: `clinigym validate` re-creates the instance
            given |= {"instance": h.instance, "split": h.split}
        tasks.append(MedspotTask(software, index, h.overview, tuple(steps), {"clinigym": given}))
    write_dataset(tasks, out)
    return tasks


def to_parquet(run_dirs: list[Path], out: Path, complete_only: bool = False) -> Path:
    """One row per recorded step with the keyframe as a `datasets.Image` column."""
    from datasets import Dataset, Features, Image, Sequence, Value

    rows = []
    for ep in _episodes(run_dirs, complete_only):
        h = ep.header
        width, height = h.coordinates["observation_size"]
        for rec in ep.steps:
            action = rec.action or {}
            rows.append({
                # Bytes, not a path: the parquet file must stand alone.
                "image": {"bytes": (ep.folder / rec.before).read_bytes(), "path": rec.before},
                "app": h.app, "scenario": h.scenario,
                "episode": ep.folder.name, "agent": h.agent or "", "overview": h.overview,
                "step": rec.step, "instruction": rec.instruction,
                "expected_action": rec.expected_action or "", "target_box": rec.target_box or [],
                "action_type": action.get("type", ""), "point": action.get("point") or [],
                "correct": bool(rec.correct), "failure": rec.failure or "",
                "width": width, "height": height})
    features = Features({
        "image": Image(), "app": Value("string"), "scenario": Value("string"), "episode": Value("string"),
        "agent": Value("string"), "overview": Value("string"), "step": Value("int32"),
        "instruction": Value("string"), "expected_action": Value("string"),
        "target_box": Sequence(Value("float32")), "action_type": Value("string"),
        "point": Sequence(Value("float32")), "correct": Value("bool"), "failure": Value("string"),
        "width": Value("int32"), "height": Value("int32")})
    dataset = Dataset.from_list(rows, features=features)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    dataset.to_parquet(str(out))
    return out
