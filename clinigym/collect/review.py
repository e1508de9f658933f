"""Reviewing a recorded episode (an agent's run): step through its frames with the target
box and the predicted point, mark a step's ground truth wrong and fix its box.

Corrections are saved back beside the episode, in `<episode>/corrected/`:
`<app>_Annotation.json` (MedSPOT format, one task: the episode's steps with the
corrected boxes, in percent as `clinigym export` writes them), the keyframes it names,
and `corrections.json` (per corrected step: the recorded and the corrected box, the note).
"""
from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

from clinigym.collect.errors import ActionError
from clinigym.collect.quality import validate_box
from clinigym.core.recording_schema import StepRecord
from clinigym.eval.export import percent_box
from clinigym.recording import read_episode
from clinigym.spec.medspot import GroundTruth, MedspotStep, MedspotTask, write_dataset


class ReviewSession:
    def __init__(self, episode: Path):
        self.folder = Path(episode)
        if not (self.folder / "episode.json").exists():
            raise ValueError(f"{self.folder}: not an episode folder (no episode.json)")
        self.episode = read_episode(self.folder)
        self.width, self.height = self.episode.header.coordinates["observation_size"]
        self.out = self.folder / "corrected"
        self.lock = threading.Lock()
        self.corrections: dict[int, dict] = {}
        saved = self.out / "corrections.json"
        if saved.exists():
            self.corrections = {int(c["t"]): c for c in json.loads(saved.read_text())["corrections"]}

    def state(self) -> dict:
        h = self.episode.header
        steps = []
        for rec in self.episode.steps:
            action = rec.action or {}
            steps.append({"t": rec.t, "step": rec.step, "instruction": rec.instruction,
                          "expected_action": rec.expected_action, "action": action,
                          "point": action.get("point"), "target_box": rec.target_box,
                          "end_box": rec.end_box, "hit": rec.hit, "correct": rec.correct,
                          "failure": rec.failure, "before": rec.before, "after": rec.after,
                          "correction": self.corrections.get(rec.t)})
        return {"mode": "review", "episode": str(self.folder), "scenario": h.scenario, "app": h.app,
                "agent": h.agent, "overview": h.overview, "outcome": h.outcome.to_json() if h.outcome else None,
                "screen": [self.width, self.height], "steps": steps, "out": str(self.out)}

    def image(self, t: int, which: str) -> Path:
        rec = self._rec(t)
        name = getattr(rec, which) if which in ("before", "after") else None
        if not name:
            raise KeyError(f"no {which} image of step {t}")
        return self.folder / name

    def _rec(self, t) -> StepRecord:
        if not isinstance(t, int) or isinstance(t, bool) or not 0 <= t < len(self.episode.steps):
            raise ActionError(f"no step {t!r}; steps: 0..{len(self.episode.steps) - 1}")
        return self.episode.steps[t]

    def correct(self, t, box=None, wrong: bool = True, note: str = "") -> dict:
        """Mark step `t`'s ground truth wrong with its fixed box (or unmark it); saves the file."""
        rec = self._rec(t)
        with self.lock:
            if wrong:
                if box is None:
                    raise ActionError("a step marked wrong needs its fixed box")
                try:
                    fixed = validate_box(box, self.width, self.height)
                except ValueError as exc:
                    raise ActionError(str(exc)) from None
                self.corrections[t] = {"t": t, "step": rec.step, "instruction": rec.instruction,
                                       "recorded_box": rec.target_box, "box": fixed, "note": note or ""}
            else:
                self.corrections.pop(t, None)
            path = self.save()
            return {"saved": str(path), "corrections": len(self.corrections)}

    def save(self) -> Path:
        h = self.episode.header
        software = h.app
        images = self.out / "Images" / software
        images.mkdir(parents=True, exist_ok=True)
        steps = []
        for rec in self.episode.steps:
            fix = self.corrections.get(rec.t)
            box = fix["box"] if fix else rec.target_box
            if box is None:
                continue
            image = f"Images/{software}/{self.folder.name}-{rec.t:03d}.png"
            if not (self.out / image).exists():
                shutil.copyfile(self.folder / rec.before, self.out / image)
            gt = GroundTruth(rec.expected_action or "click", rec.instruction,
                             percent_box(box, self.width, self.height))
            steps.append(MedspotStep(len(steps) + 1, image, rec.instruction, (gt,)))
        task = MedspotTask(software, 0, h.overview, tuple(steps), {"clinigym": {
            "scenario": h.scenario, "episode": self.folder.name, "image_size": [self.width, self.height],
            "corrected_steps": sorted(self.corrections)}})
        path = write_dataset([task], self.out)[0]
        (self.out / "corrections.json").write_text(json.dumps(
            {"episode": str(self.folder), "annotation": path.name,
             "corrections": [self.corrections[t] for t in sorted(self.corrections)]}, indent=2))
        return path
