"""MedSPOT-format datasets, both ways.

A dataset is a folder with `<Software>_Annotation.json` files (and, when the
user has them, the images under the paths the steps name). The quirks of the
published files are kept, not "fixed": steps without actions (not scorable),
non-click first actions, one instruction that is a dict of texts, duplicate
task names (tasks are identified by software and index), 1 to 10 steps.
Writing a dataset and reading it back gives the same data.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clinigym.core.errors import DataError
from clinigym.core.geometry import Box

ANNOTATION_SUFFIX = "_Annotation.json"


@dataclass(frozen=True)
class GroundTruth:
    type: str                              # click, double_click, drag, hover, type, ...
    target: str
    bbox: tuple[float, float, float, float]  # percent: x, y, w, h

    def box(self, width: int, height: int) -> Box:
        return Box.from_percent(*self.bbox, width, height)


@dataclass(frozen=True)
class MedspotStep:
    step_id: int
    image_path: str
    instruction: str | dict
    actions: tuple[GroundTruth, ...]

    @property
    def text(self) -> str:
        """The instruction as one string (the dict-valued one joins its texts)."""
        if isinstance(self.instruction, dict):
            parts = self.instruction.get("text", [])
            return " ".join(parts) if isinstance(parts, list) else str(parts)
        return self.instruction

    @property
    def scorable(self) -> bool:
        return bool(self.actions)


@dataclass(frozen=True)
class MedspotTask:
    software: str
    index: int
    overview: str
    steps: tuple[MedspotStep, ...]
    extra: dict = field(default_factory=dict, compare=False)  # unknown keys, kept for round trips

    @property
    def key(self) -> str:
        return f"{self.software}/{self.index}"


class DatasetError(DataError):
    pass


def _step(raw: dict, where: str) -> MedspotStep:
    try:
        actions = tuple(GroundTruth(a["type"], a.get("target", ""), tuple(float(v) for v in a["bbox"]))
                        for a in raw.get("actions") or [])
        for a in actions:
            if len(a.bbox) != 4:
                raise ValueError("bbox must have 4 numbers")
        return MedspotStep(int(raw["step_id"]), raw["image_path"], raw["instruction"], actions)
    except (KeyError, TypeError, ValueError) as exc:
        raise DatasetError(f"{where}: {exc.__class__.__name__}: {exc}") from None


def read_file(path: Path) -> list[MedspotTask]:
    path = Path(path)
    software = path.name.removesuffix(ANNOTATION_SUFFIX)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
        raise DatasetError(f"{path}: expected {{\"tasks\": [...]}}")
    tasks = []
    for i, raw in enumerate(data["tasks"]):
        steps = tuple(_step(s, f"{path}: tasks[{i}].steps[{j}]") for j, s in enumerate(raw.get("steps", [])))
        extra = {k: v for k, v in raw.items() if k not in ("task_overview", "steps")}
        tasks.append(MedspotTask(software, i, raw.get("task_overview", ""), steps, extra))
    return tasks


def read_dataset(folder: Path) -> list[MedspotTask]:
    """Every `*_Annotation.json` under the folder (or `annotations/` inside it)."""
    folder = Path(folder)
    files = sorted(folder.glob(f"*{ANNOTATION_SUFFIX}")) or sorted(folder.glob(f"annotations/*{ANNOTATION_SUFFIX}"))
    if not files:
        raise DatasetError(f"{folder}: no *{ANNOTATION_SUFFIX} files")
    return [t for f in files for t in read_file(f)]


def _step_json(step: MedspotStep) -> dict[str, Any]:
    return {"step_id": step.step_id, "image_path": step.image_path, "instruction": step.instruction,
            "actions": [{"type": a.type, "target": a.target, "bbox": list(a.bbox)} for a in step.actions]}


def write_dataset(tasks: list[MedspotTask], folder: Path) -> list[Path]:
    """One annotation file per software, tasks in index order."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    by_software: dict[str, list[MedspotTask]] = {}
    for t in tasks:
        by_software.setdefault(t.software, []).append(t)
    written = []
    for software, group in sorted(by_software.items()):
        group.sort(key=lambda t: t.index)
        data = {"tasks": [{"task_overview": t.overview, "steps": [_step_json(s) for s in t.steps], **t.extra}
                          for t in group]}
        path = folder / f"{software}{ANNOTATION_SUFFIX}"
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False))
        written.append(path)
    return written


def image_of(step: MedspotStep, dataset: Path) -> Path:
    """Where a step's image is: `image_path` relative to the dataset folder."""
    return Path(dataset) / step.image_path
