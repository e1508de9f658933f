"""A scenario on the live program as a Gymnasium environment.

Coordinate contract (stated once, here, and in every `info["coordinates"]`):
action points are pixels of the observation image; the environment maps them
to screen pixels by the scale between the two sizes (1 unless an
`observation_size` is asked for).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from clinigym import actions as act
from clinigym import judge
from clinigym.apps import load_app
from clinigym.backends import Backend, make_backend
from clinigym.conditions import holds
from clinigym.display import Frame, Geometry, InputError
from clinigym.envs import spaces
from clinigym.envs.base import ScreenEnv
from clinigym.judge import Box
from clinigym.recording import EpisodeRecorder, new_episode
from clinigym.scenarios import Scenario, SetupStep, load_scenario
from clinigym.waiting import Abort, WaitTimeout, poll, wait_for


@dataclass(frozen=True)
class Coordinates:
    """Observation pixels <-> screen pixels."""
    obs_w: int
    obs_h: int
    screen_w: int
    screen_h: int

    @property
    def scale(self) -> tuple[float, float]:
        return self.screen_w / self.obs_w, self.screen_h / self.obs_h

    def to_screen(self, point: tuple[float, float]) -> tuple[int, int]:
        sx, sy = self.scale
        return (min(self.screen_w - 1, int(point[0] * sx)), min(self.screen_h - 1, int(point[1] * sy)))

    def box_to_obs(self, box: Box) -> Box:
        sx, sy = self.scale
        return Box(box.x1 / sx, box.y1 / sy, box.x2 / sx, box.y2 / sy)

    def info(self) -> dict:
        return spaces.coordinates_info(self.obs_w, self.obs_h, self.screen_w, self.screen_h)



class LiveEnv(ScreenEnv):
    """One scenario on its live program. `backend` is a backend kind ("local",
    "docker"; default: see clinigym.backends), or a running backend to share between
    environments (the caller then closes it)."""

    def __init__(self, scenario: Scenario | str | Path, backend: Backend | str | None = None,
                 geometry: Geometry = Geometry(), observation_size: tuple[int, int] | None = None,
                 record_dir: str | Path | None = None, recovery: bool = False,
                 max_actions: int | None = None, render_mode: str | None = None,
                 agent_name: str = "unknown"):
        self.scenario = scenario if isinstance(scenario, Scenario) else load_scenario(Path(scenario))
        self.app = load_app(self.scenario.app)
        self._owns_backend = not isinstance(backend, Backend)
        self.backend = backend if isinstance(backend, Backend) else make_backend(self.app, backend, geometry)
        g = self.backend.geometry
        ow, oh = observation_size or (g.width, g.height)
        self.coords = Coordinates(ow, oh, g.width, g.height)
        self.recovery = recovery
        self.max_actions = max_actions or (3 * len(self.scenario.steps) if recovery else len(self.scenario.steps))
        self.render_mode = render_mode
        self.record_dir = Path(record_dir) if record_dir else None
        self.agent_name = agent_name
        self.observation_space = spaces.observation_space(ow, oh, len(self.scenario.steps),
                                                         [st.instruction for st in self.scenario.steps])
        self.action_space = spaces.action_space(ow, oh)
        self._frame: Frame | None = None
        self._obs_rgb: np.ndarray | None = None
        self._step_index = 0
        self._actions = 0
        self._done = True
        self._targets: tuple[Box | None, Box | None] = (None, None)
        self._recorder: EpisodeRecorder | None = None
        self._seed: int | None = None

    # -- observations ------------------------------------------------------------------
    def _to_obs(self, frame: Frame) -> np.ndarray:
        rgb = frame.rgb
        if (self.coords.obs_w, self.coords.obs_h) != (rgb.shape[1], rgb.shape[0]):
            rgb = np.asarray(Image.fromarray(rgb).resize((self.coords.obs_w, self.coords.obs_h),
                                                         Image.BILINEAR))
        return rgb

    def _observe(self, frame: Frame) -> dict:
        self._frame = frame
        rgb = self._to_obs(frame)
        self._obs_rgb = rgb
        steps = self.scenario.steps
        instruction = steps[self._step_index].instruction if self._step_index < len(steps) else ""
        return {"screenshot": rgb.copy(), "instruction": instruction, "step": self._step_index}

    def _resolve_targets(self) -> None:
        """Live target boxes of the current step, resolved on the state the agent sees."""
        if self._step_index >= len(self.scenario.steps):
            self._targets = (None, None)
            return
        step = self.scenario.steps[self._step_index]
        boxes = []
        for target in (step.target, step.end_target):
            if target is None:
                boxes.append(None)
                continue
            box = poll(lambda t=target: self.backend.resolve(t), timeout=5)
            if box is None:
                raise TargetNotFound(f"step {self._step_index + 1}: target {target.model_dump(exclude_none=True)} "
                                     "not found on the live screen")
            boxes.append(self.coords.box_to_obs(box))
        self._targets = (boxes[0], boxes[1])

    def _base_info(self) -> dict:
        target, end = self._targets
        return {"scenario": self.scenario.key, "step": self._step_index,
                "n_steps": len(self.scenario.steps), "coordinates": self.coords.info(),
                "target_box": target.as_list() if target else None,
                "end_box": end.as_list() if end else None}

    # -- reset ------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._seed = seed
        self._finish_recording({"status": "abandoned"})
        t0 = time.monotonic()
        try:
            frame = self._reset_program()
        except (WaitTimeout, Abort, RuntimeError) as exc:
            if isinstance(exc, TargetNotFound):
                raise
            # Self-healing: one more try from a new display and fresh processes.
            self.backend.close_display()
            frame = self._reset_program()
        self._step_index, self._actions, self._done = 0, 0, False
        self._resolve_targets()
        obs = self._observe(frame)
        info = self._base_info()
        info["timings"] = {"reset": time.monotonic() - t0}
        self._start_recording()
        return obs, info

    def _reset_program(self) -> Frame:
        frame = self.backend.reset(self.scenario.args)
        for i, setup in enumerate(self.scenario.setup):
            frame = self._run_setup(i, setup, frame)
        return frame

    def _run_setup(self, i: int, setup: SetupStep, frame: Frame) -> Frame:
        display = self.backend.display
        if setup.action == "key":
            display.key(setup.keys)
        else:
            box = wait_for(lambda: self.backend.resolve(setup.target), 10, f"set-up step {i + 1} target")
            end = self.backend.resolve(setup.end_target) if setup.end_target else None
            self.backend.display.perform(setup.action, box.center, end.center if end else None, setup.text)
        if setup.until:
            wait_for(lambda: holds(setup.until, self.backend, frame, self.backend.display.grab(),
                                   self.app.settle.min_changed),
                     self.app.settle.timeout, f"set-up step {i + 1}: {setup.until.describe()}")
        return self.backend.settle(since=frame)[0]

    # -- step -------------------------------------------------------------------------
    def step(self, action):
        t_start = time.monotonic()
        timings: dict[str, float] = {}
        info = self._base_info()
        if self._done:
            info.update(invalid_action="the episode has ended: call reset()", hit=False, correct=False)
            return self._observe(self._frame), 0.0, True, False, info
        before = self._obs_rgb
        step = self.scenario.steps[self._step_index]
        record: dict[str, Any] = {"step": self._step_index, "instruction": step.instruction,
                                  "expected_action": step.action, "raw_action": _raw(action)}
        target, end_box = self._targets
        # 1. validate
        meta = None
        try:
            parsed = act.parse(action)
            meta = parsed.meta
            act.validate(parsed, self.coords.obs_w, self.coords.obs_h)
            invalid = None
        except act.InvalidAction as exc:
            parsed, invalid = None, str(exc)
        # 2. judge against the target resolved on the observation the agent saw
        t = time.monotonic()
        hit, type_ok = self._judge(step, parsed, target, end_box)
        timings["judge"] = time.monotonic() - t
        # 3. inject (a wrong action is executed too, so the recording shows its consequence)
        dead = self.backend.dead()
        transition_seen = None
        settled, settle_time = True, 0.0
        after_frame = self._frame
        if parsed is not None and dead is None:
            t = time.monotonic()
            try:
                self._inject(parsed)
            except InputError as exc:
                invalid = str(exc)
            timings["inject"] = time.monotonic() - t
            t = time.monotonic()
            after_frame, settled = self.backend.settle(since=self._frame)
            settle_time = timings["settle"] = time.monotonic() - t
            dead = self.backend.dead(quitting=frozenset(c.exited for c in step.transition if c.exited))
            if dead is None:
                t = time.monotonic()
                transition_seen, after_frame = self._transition(step, hit and type_ok and not invalid,
                                                                after_frame)
                timings["transition"] = time.monotonic() - t
        correct = bool(hit and type_ok and not invalid and transition_seen and dead is None)
        final_check = None
        if correct and self._step_index == len(self.scenario.steps) - 1 and self.scenario.check:
            t = time.monotonic()
            final_check = self._final_check()
            timings["check"] = time.monotonic() - t
            correct = final_check
        failure = None
        if not correct:
            failure = self._failure(parsed, invalid, hit, type_ok, target, dead)
        t = time.monotonic()
        self._actions += 1
        truncated = dead is not None
        if correct:
            self._step_index += 1
        terminated = (correct and self._step_index == len(self.scenario.steps)) or \
                     (not correct and not self.recovery and not truncated)
        if not terminated and not truncated and self._actions >= self.max_actions:
            truncated = True
        if not (terminated or truncated):
            try:
                self._resolve_targets()
            except TargetNotFound as exc:
                truncated, dead = True, str(exc)
        obs = self._observe(after_frame)
        timings["capture"] = time.monotonic() - t
        timings["total"] = time.monotonic() - t_start
        info.update(
            action=parsed.to_json() if parsed else None, invalid_action=invalid, hit=hit,
            action_type_ok=type_ok, correct=correct, failure=failure,
            transition_expected=[c.describe() for c in step.transition],
            transition_seen=transition_seen, final_check=final_check, settled=settled,
            settle_time=settle_time, timings=timings, target_size=judge.target_size(
                target, self.coords.obs_w, self.coords.obs_h) if target else None)
        if dead is not None:
            info["truncated_reason"] = dead
        info["next_step"] = self._step_index
        record.update({k: info[k] for k in (
            "action", "invalid_action", "hit", "action_type_ok", "correct", "failure",
            "transition_expected", "transition_seen", "final_check", "settled",
            "settle_time", "timings", "target_size")},
            target_box=target.as_list() if target else None,
            end_box=end_box.as_list() if end_box else None,
            truncated_reason=info.get("truncated_reason"), agent=meta)
        self._done = terminated or truncated
        if self._recorder:
            self._recorder.step(record, before, obs["screenshot"])
            if self._done:
                self._finish_recording(self._outcome(terminated, truncated, info))
        return obs, float(correct), terminated, truncated, info

    def _judge(self, step, parsed, target, end_box) -> tuple[bool, bool]:
        if parsed is None or target is None:
            return False, False
        point = parsed.point if parsed.point is not None else self._pointer_obs()
        hit = judge.hit(point, target)
        if step.action == "drag":
            hit = hit and parsed.end_point is not None and judge.hit(parsed.end_point, end_box)
        type_ok = parsed.type == step.action
        if step.action == "type":
            type_ok = type_ok and (parsed.text or "") == step.text
        return hit, type_ok

    def _pointer_obs(self) -> tuple[float, float]:
        x, y = self.backend.display.pointer()
        sx, sy = self.coords.scale
        return x / sx, y / sy

    def _failure(self, parsed, invalid, hit, type_ok, target, dead) -> str:
        if dead is not None:
            return "app_crashed"
        if parsed is None or invalid or target is None:
            return "no_prediction"
        point = parsed.point if parsed.point is not None else self._pointer_obs()
        if not hit:
            return judge.failure_type(point, target, self.coords.obs_w, self.coords.obs_h)
        if not type_ok:
            return "wrong_action_type"
        return "no_transition"

    def _transition(self, step, expected: bool, after: Frame) -> tuple[bool, Frame]:
        """Whether every expected condition holds. For a correct action, wait for it
        (bounded) and re-settle if the screen moved on meanwhile; otherwise look once."""
        def check(frame: Frame) -> bool:
            return all(holds(c, self.backend, self._frame, frame, self.app.settle.min_changed)
                       for c in step.transition)
        if check(after):
            return True, after
        if not expected:
            return False, after
        deadline = time.monotonic() + self.app.settle.timeout
        while time.monotonic() < deadline:
            frame, _ = self.backend.settle(since=after)
            if check(frame):
                return True, frame
            after = frame
        return False, after

    def _final_check(self) -> bool:
        return bool(poll(lambda: all(holds(c, self.backend) for c in self.scenario.check),
                         timeout=self.app.settle.timeout))

    def _inject(self, a: act.Action) -> None:
        point = self.coords.to_screen(a.point) if a.point is not None else None
        end = self.coords.to_screen(a.end_point) if a.end_point is not None else None
        self.backend.display.perform(a.type, point, end, a.text, a.keys, a.scroll)

    def moving_pixels(self, seconds: float, interval: float = 0.05) -> np.ndarray:
        """Which pixels of the last observation change by themselves (a blinking caret, a
        clock) while the screen is watched for `seconds`: an H x W boolean mask in
        observation pixels. Nothing is sent to the program."""
        moving = np.zeros(self._obs_rgb.shape[:2], bool)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            moving |= np.any(self._to_obs(self.backend.display.grab()) != self._obs_rgb, axis=-1)
            time.sleep(interval)
        return moving

    # -- oracle -----------------------------------------------------------------------
    def current_target(self) -> Box | None:
        """The live target box of the current step, in observation pixels (privileged)."""
        return None if self._done else self._targets[0]

    def oracle_action(self) -> act.Action | None:
        """The ground-truth action for the current step: the centre of its live target."""
        if self._done or self._step_index >= len(self.scenario.steps):
            return None
        step = self.scenario.steps[self._step_index]
        target, end = self._targets
        return act.Action(step.action, target.center, end.center if end else None, step.text)

    # -- recording ----------------------------------------------------------------------
    def _start_recording(self) -> None:
        if not self.record_dir:
            return
        s = self.scenario
        self._recorder = new_episode(self.record_dir, f"{s.app}-{s.id}", {
            "scenario": s.key, "scenario_path": str(s.path), "gym_id": s.gym_id, "app": s.app,
            "overview": s.overview, "n_steps": len(s.steps),
            "medspot": s.medspot.model_dump() if s.medspot else None,
            "agent": self.agent_name, "seed": self._seed, "backend": self.backend.kind,
            "recovery": self.recovery, "coordinates": self.coords.info(),
            "steps": [{"instruction": st.instruction, "action": st.action} for st in s.steps],
            "versions": self.backend.package_versions(),
        })

    def _outcome(self, terminated: bool, truncated: bool, info: dict) -> dict:
        status = "complete" if terminated and info["correct"] else ("truncated" if truncated else "failed")
        return {"status": status, "steps_correct": self._step_index, "actions": self._actions,
                "reason": info.get("truncated_reason") or info.get("failure")}

    def close(self) -> None:
        super().close()
        if self._owns_backend:
            self.backend.close()


class TargetNotFound(RuntimeError):
    pass


def _raw(action) -> Any:
    if isinstance(action, (str, int, float)) or action is None:
        return action
    if isinstance(action, act.Action):
        return action.to_json()
    if isinstance(action, dict):
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in action.items()}
    return repr(action)
