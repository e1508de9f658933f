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

from clinigym.core import actions as act
from clinigym.core import judge
from clinigym.core.context import AgentContext
from clinigym.core.geometry import Box, coordinates_info
from clinigym.core.recording_schema import EpisodeHeader, EpisodeOutcome
from clinigym.envs import spaces
from clinigym.envs.base import (
    END_BUDGET,
    END_COMPLETED,
    END_INCORRECT,
    Observation,
    ScreenEnv,
    StepResult,
    parse_action,
    step_record,
)
from clinigym.spec.medspot import DatasetError, MedspotStep, MedspotTask, image_of, read_dataset


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
        self.software = software
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
        self._image_size = (self.obs_w, self.obs_h)
        self._i = 0
        self._done = True
        self._actions = self._hits = 0
        self._budget = 0

    def agent_context(self) -> AgentContext:
        # The program only when every task is one program's (MedSPOT's software name).
        programs = {t.software for t in self.tasks}
        return AgentContext((self.obs_w, self.obs_h), programs.pop() if len(programs) == 1 else None,
                            act.ACTION_TYPES, self.mode)

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

    def _box(self) -> Box:
        return self._steps[self._i].actions[0].box(self.obs_w, self.obs_h)

    def _public(self, **public: Any) -> dict[str, Any]:
        # No timings: nothing runs here, and a deterministic info lets check_env verify
        # step determinism for real.
        w, h = self._image_size
        return self._info(self._i, len(self._steps), coordinates_info(self.obs_w, self.obs_h, w, h), **public)

    # -- API --------------------------------------------------------------------------
    def _reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Observation, dict[str, Any]]:
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
        self._budget = judge.action_budget(len(self._steps), judge.BUDGET_FACTOR)
        obs = self._observe()
        t = self.task
        self._start_recording(f"medspot-{t.software}-{t.index:03d}", EpisodeHeader(
            scenario=f"medspot:{t.key}", app=t.software, overview=t.overview, n_steps=len(self._steps),
            coordinates=coordinates_info(self.obs_w, self.obs_h, self.obs_w, self.obs_h),
            steps=[{"instruction": s.text, "action": s.actions[0].type} for s in self._steps], seed=seed,
            backend="static", mode=self.mode, recovery=self.recovery, single_step=self.single_step,
            medspot={"software": t.software, "task": t.index}, dataset=str(self.dataset), delta=self.delta))
        return obs, self._public()

    def _observe_again(self) -> Observation:
        return self._observe()

    def _step(self, action: Any) -> StepResult:
        before = self._obs_rgb
        step = self._steps[self._i]
        box = self._box()
        parsed, invalid, meta = parse_action(action, self.obs_w, self.obs_h)
        point = parsed.point if parsed is not None else None
        hit = point is not None and judge.hit(point, box, self.delta)
        record = step_record(
            self._i, step.text, step.actions[0].type, action, parsed, meta, box, None, (self.obs_w, self.obs_h),
            invalid_action=invalid, hit=hit, action_type_ok=True, correct=hit,
            failure=None if hit else judge.failure_type(point, box, self.obs_w, self.obs_h),
            medspot_step_id=step.step_id)
        self._actions += 1
        self._hits += hit
        if hit or self.single_step:
            self._i += 1
        terminated = self._i == len(self._steps) or (not hit and not self.recovery and not self.single_step)
        truncated = not terminated and judge.budget_spent(self._actions, self._budget)
        self._done = terminated or truncated
        obs = self._observe() if not self._done else {"screenshot": before.copy(), "instruction": "",
                                                      "step": self._i}
        outcome = None
        if self._done:
            status = "complete" if self._hits == len(self._steps) else ("truncated" if truncated else "failed")
            outcome = EpisodeOutcome(status, self._i, self._actions, record.failure)
        verdict = self._record(record, before, None, outcome)
        end = None
        if outcome is not None:
            end = END_BUDGET if truncated else END_COMPLETED if outcome.status == "complete" else END_INCORRECT
        return obs, float(hit), terminated, truncated, self._public(invalid_action=invalid, end_reason=end, **verdict)

    # -- ground truth (privileged: `clinigym.envs.ground_truth`) -----------------------------
    def _truth_target(self) -> Box | None:
        return None if self._done else self._box()

    def _truth_action(self) -> act.Action | None:
        if self._done:
            return None
        box = self._box()
        gt = self._steps[self._i].actions[0]
        return act.Action(gt.type if gt.type in act.ACTION_TYPES else "click", box.center,
                          box.center if gt.type == "drag" else None, "x" if gt.type == "type" else None)
