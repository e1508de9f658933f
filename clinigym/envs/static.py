"""MedSPOT's static keyframe mode as a Gymnasium environment.

Same observation and action spaces as the live environment: the observation
is the step's keyframe (scaled to `observation_size`), the step is judged by
its point alone (PROTOCOL.md's hit rule, optional tolerance `delta`), and the
first error ends the task. Steps without a ground-truth action are skipped.
Episodes are recorded in the live format, so the same scorer reads both.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from clinigym import actions as act
from clinigym import judge
from clinigym.envs import spaces
from clinigym.envs.base import ScreenEnv
from clinigym.judge import Box
from clinigym.medspot import DatasetError, MedspotStep, MedspotTask, image_of, read_dataset
from clinigym.recording import EpisodeRecorder, new_episode


class StaticEnv(ScreenEnv):
    def __init__(self, dataset: str | Path, software: str | None = None, tasks: list[int] | None = None,
                 observation_size: tuple[int, int] = (1920, 1080), delta: float = 0.0,
                 record_dir: str | Path | None = None, recovery: bool = False,
                 single_step: bool = False, render_mode: str | None = None, agent_name: str = "unknown"):
        self.dataset = Path(dataset)
        all_tasks = [t for t in read_dataset(self.dataset) if software in (None, t.software)]
        if tasks is not None:
            all_tasks = [t for t in all_tasks if t.index in tasks]
        self.tasks = [t for t in all_tasks if any(s.scorable for s in t.steps)]
        self.skipped_tasks = [t.key for t in all_tasks if t not in self.tasks]
        if not self.tasks:
            raise DatasetError(f"{self.dataset}: no task with a scorable step matches")
        self.obs_w, self.obs_h = observation_size
        self.delta = delta
        if recovery and single_step:
            raise ValueError("recovery and single_step are different protocols: choose one")
        self.recovery = recovery
        # MedSPOT's ablation: every step is shown and judged whatever happened before it.
        self.single_step = single_step
        self.render_mode = render_mode
        self.record_dir = Path(record_dir) if record_dir else None
        self.agent_name = agent_name
        max_steps = max(len(t.steps) for t in self.tasks)
        self.observation_space = spaces.observation_space(
            self.obs_w, self.obs_h, max_steps, [s.text for t in self.tasks for s in t.steps])
        self.action_space = spaces.action_space(self.obs_w, self.obs_h)
        self._next_task = 0
        self.task: MedspotTask | None = None
        self._steps: list[MedspotStep] = []
        self._i = 0
        self._done = True
        self._obs_rgb: np.ndarray | None = None
        self._recorder: EpisodeRecorder | None = None
        self._actions = self._hits = 0

    # -- helpers ----------------------------------------------------------------------
    def _keyframe(self, step: MedspotStep) -> tuple[np.ndarray, tuple[int, int]]:
        path = image_of(step, self.dataset)
        if not path.exists():
            raise DatasetError(f"{self.dataset}: keyframe {step.image_path} of {self.task.key} "
                               f"step {step.step_id} not found")
        with Image.open(path) as img:
            size = img.size
            rgb = img.convert("RGB").resize((self.obs_w, self.obs_h), Image.BILINEAR) \
                if size != (self.obs_w, self.obs_h) else img.convert("RGB")
            return np.asarray(rgb, dtype=np.uint8), size

    def _observe(self) -> dict:
        if self._i < len(self._steps):
            self._obs_rgb, self._image_size = self._keyframe(self._steps[self._i])
            instruction = self._steps[self._i].text
        else:
            instruction = ""
        return {"screenshot": self._obs_rgb.copy(), "instruction": instruction, "step": self._i}

    def current_target(self) -> Box | None:
        if self._done:
            return None
        return self._steps[self._i].actions[0].box(self.obs_w, self.obs_h)

    def oracle_action(self) -> act.Action | None:
        box = self.current_target()
        if box is None:
            return None
        gt = self._steps[self._i].actions[0]
        return act.Action(gt.type if gt.type in act.ACTION_TYPES else "click", box.center,
                          box.center if gt.type == "drag" else None, "x" if gt.type == "type" else None)

    def _info(self) -> dict:
        box = self.current_target()
        w, h = getattr(self, "_image_size", (self.obs_w, self.obs_h))
        return {"scenario": f"medspot:{self.task.key}", "step": self._i, "n_steps": len(self._steps),
                "coordinates": spaces.coordinates_info(self.obs_w, self.obs_h, w, h),
                "target_box": box.as_list() if box else None}

    # -- API --------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._finish_recording({"status": "abandoned"})
        if options and "task" in options:
            key = options["task"]
            matches = [i for i, t in enumerate(self.tasks) if key in (t.key, t.index)]
            if not matches:
                raise KeyError(f"no scorable task {key!r} in {self.dataset}")
            self._next_task = matches[0]
        elif seed is not None:
            # A seeded reset picks its task from the seed, so that it is reproducible.
            self._next_task = int(self.np_random.integers(len(self.tasks)))
        self.task = self.tasks[self._next_task % len(self.tasks)]
        self._next_task += 1
        self._steps = [s for s in self.task.steps if s.scorable]
        self._i, self._actions, self._hits, self._done = 0, 0, 0, False
        obs = self._observe()
        info = self._info()
        self._start_recording(seed)
        return obs, info

    def step(self, action):
        # No timings in info: nothing runs here, and a deterministic info lets check_env
        # verify step determinism for real.
        info = self._info()
        if self._done:
            info.update(invalid_action="the episode has ended: call reset()", hit=False, correct=False)
            return self._observe(), 0.0, True, False, info
        before = self._obs_rgb
        step = self._steps[self._i]
        box = self.current_target()
        meta = None
        try:
            parsed = act.parse(action)
            meta = parsed.meta
            act.validate(parsed, self.obs_w, self.obs_h)
            invalid = None
        except act.InvalidAction as exc:
            parsed, invalid = None, str(exc)
        point = parsed.point if parsed is not None else None
        hit = point is not None and judge.hit(point, box, self.delta)
        failure = None if hit else judge.failure_type(point, box, self.obs_w, self.obs_h)
        record = {"step": self._i, "instruction": step.text, "expected_action": step.actions[0].type,
                  "raw_action": action if isinstance(action, (str, type(None))) else
                  (parsed.to_json() if parsed else repr(action)),
                  "action": parsed.to_json() if parsed else None, "invalid_action": invalid,
                  "hit": hit, "action_type_ok": True, "correct": hit, "failure": failure,
                  "target_box": box.as_list(), "end_box": None,
                  "target_size": judge.target_size(box, self.obs_w, self.obs_h),
                  "transition_expected": [], "transition_seen": None, "final_check": None,
                  "medspot_step_id": step.step_id, "agent": meta}
        self._actions += 1
        self._hits += hit
        if hit or self.single_step:
            self._i += 1
        terminated = self._i == len(self._steps) or (not hit and not self.recovery and not self.single_step)
        truncated = not terminated and self._actions >= 3 * len(self._steps)
        self._done = terminated or truncated
        obs = self._observe() if not self._done else {"screenshot": before.copy(), "instruction": "",
                                                      "step": self._i}
        info.update({k: record[k] for k in ("action", "invalid_action", "hit", "correct", "failure",
                                            "target_size")}, next_step=self._i)
        if self._recorder:
            self._recorder.step(record, before, None)
            if self._done:
                status = "complete" if self._hits == len(self._steps) else ("truncated" if truncated else "failed")
                self._finish_recording({"status": status, "steps_correct": self._i, "actions": self._actions,
                              "reason": failure})
        return obs, float(hit), terminated, truncated, info

    def _start_recording(self, seed) -> None:
        if not self.record_dir:
            return
        t = self.task
        self._recorder = new_episode(self.record_dir, f"medspot-{t.software}-{t.index:03d}", {
            "scenario": f"medspot:{t.key}", "app": t.software, "overview": t.overview,
            "n_steps": len(self._steps), "medspot": {"software": t.software, "task": t.index},
            "agent": self.agent_name, "seed": seed, "backend": "static", "recovery": self.recovery,
            "single_step": self.single_step, "dataset": str(self.dataset), "delta": self.delta,
            "coordinates": spaces.coordinates_info(self.obs_w, self.obs_h, self.obs_w, self.obs_h),
            "steps": [{"instruction": s.text, "action": s.actions[0].type} for s in self._steps]})

