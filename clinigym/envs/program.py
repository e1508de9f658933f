"""What the live environments share: one scenario on its running program.

Coordinate contract (`clinigym.core.geometry`, stated in every `info["coordinates"]`):
action points are pixels of the observation image; the environment maps them to
screen pixels by the scale between the two sizes (1 unless an `observation_size` is
asked for).

`StepsEnv` (the steps mode: each action judged) and `GoalEnv` (the plan and goal modes:
free actions, judged at the end) differ only in how they judge; starting the scenario,
observing, acting, settling and checking conditions are here.
"""
from __future__ import annotations

import os
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from clinigym.core import actions as act
from clinigym.core import judge
from clinigym.core.context import AgentContext
from clinigym.core.elements import Tree
from clinigym.core.errors import ProgramDied, ProgramError, SpecError
from clinigym.core.geometry import Box, Coordinates
from clinigym.core.recording_schema import EpisodeHeader
from clinigym.core.screen import Frame
from clinigym.core.timing import Timings
from clinigym.envs import observations
from clinigym.envs.base import ScreenEnv, parse_action
from clinigym.envs.start import start_scenario
from clinigym.runtime.backends import Backend, make_backend
from clinigym.runtime.backends.base import Death
from clinigym.runtime.display import Geometry
from clinigym.runtime.fixtures import cohort_studies
from clinigym.runtime.waiting import attempt, poll
from clinigym.spec.apps import load_app
from clinigym.spec.cohort import split_part
from clinigym.spec.conditions import holds
from clinigym.spec.scenarios import Scenario, Step
from clinigym.spec.screen_size import check_screen_size
from clinigym.spec.task_families import Family, Instance, load_task


class ProgramEnv(ScreenEnv):
    """One scenario on its live program. `backend` is a backend kind ("local", "docker";
    default: see clinigym.runtime.backends), or a running backend to share between
    environments (the caller then closes it). Given a task family (`clinigym.spec.task_families`),
    every reset is an instance of it: `reset(seed=s)` gives instance s, and a reset without a
    seed the next instance of the environment's random generator; `split` ("train",
    "validation", "test"; None: all) is the part of its pools and domains they draw from."""
    accepted: tuple[str, ...] = act.ACTION_TYPES   # the action types this mode executes

    def __init__(self, scenario: Scenario | Family | str | Path, backend: Backend | str | None = None,
                 geometry: Geometry = Geometry(), observation_size: tuple[int, int] | None = None,
                 record_dir: str | Path | None = None, render_mode: str | None = None,
                 agent_name: str = "unknown", obs_mode: str = "screenshot", split: str | None = None):
        task = scenario if isinstance(scenario, (Scenario, Family)) else load_task(Path(scenario))
        self.family = task if isinstance(task, Family) else None
        if split is not None and self.family is None:
            raise ValueError("split goes with a task family; a scenario is one fixed task")
        split_part((), split)   # a ValueError naming the splits
        self.split = split
        self.instance: Instance | None = None   # the family's instance of this episode: the oracle's, never the agent's
        # A family's instances share their program, steps and checks' kinds: instance 0 sizes the spaces.
        self.scenario = task.scenario if isinstance(task, Family) else task
        self.app = load_app(self.scenario.app)
        self.obs = observations.obs_mode(obs_mode)
        self._owns_backend = not isinstance(backend, Backend)
        screen = backend.geometry if isinstance(backend, Backend) else geometry
        check_screen_size(self.scenario, screen.width, screen.height)   # pixel boxes hold at one size only
        reads = self.obs.reads_tree or self.scenario.reads_tree
        if isinstance(backend, Backend) and reads:
            backend.accessibility = True   # every reset restarts the program: this one's with its bridge
        self.backend = backend if isinstance(backend, Backend) else make_backend(
            self.app, backend, geometry, accessibility=reads)
        g = self.backend.geometry
        ow, oh = observation_size or (g.width, g.height)
        self.coords = Coordinates(ow, oh, g.width, g.height)
        self.render_mode = render_mode
        self.record_dir = Path(record_dir) if record_dir else None
        self.agent_name = agent_name
        self._frame: Frame | None = None
        self._done = True

    def agent_context(self) -> AgentContext:
        return AgentContext((self.coords.obs_w, self.coords.obs_h), self.app.name, self.accepted, self.mode,
                            self.obs.name)

    # -- observations ------------------------------------------------------------------
    def _to_obs(self, frame: Frame) -> np.ndarray:
        rgb = frame.rgb
        if (self.coords.obs_w, self.coords.obs_h) != (rgb.shape[1], rgb.shape[0]):
            rgb = np.asarray(Image.fromarray(rgb).resize((self.coords.obs_w, self.coords.obs_h), Image.BILINEAR))
        return rgb

    def _observe(self, frame: Frame, timings: Timings | None = None) -> dict:
        raise NotImplementedError

    def _observe_again(self) -> dict:
        return self._observe(self._frame)

    def _screen(self, frame: Frame, timings: Timings | None) -> dict[str, Any]:
        """The observation's fields of the screen (`clinigym.envs.observations`): the
        screenshot of the settled `frame`, and in the modes that ask for it the program's tree,
        read now, from the same settled screen (timed as the phase ``a11y``)."""
        self._frame = frame
        self._obs_rgb = self._to_obs(frame)
        tree = None
        if self.obs.reads_tree:
            with timings.phase("a11y") if timings else nullcontext():
                tree = self._tree()
        return self.obs.fields(self._obs_rgb.copy(), tree)

    def _tree(self) -> Tree:
        """The program's tree in observation pixels; empty when the program has died (the
        step that saw it die ends the episode with the reason)."""
        try:
            return self.backend.elements().to_obs(self.coords)
        except Exception:  # noqa: BLE001 - a dead program's bus or DevTools fails in its own way
            if self.backend.dead() is None:
                raise
            return Tree(())

    # -- the start state ----------------------------------------------------------------
    def _draw(self, seed: int | None) -> None:
        """A family's instance for this episode: `seed`'s, or the generator's next one."""
        if self.family is None:
            return
        self.instance = self.family.instance(int(self.np_random.integers(2**31)) if seed is None else seed,
                                             self.split)
        self.scenario = self.instance.scenario

    def _start(self, timings: Timings) -> tuple[Frame, str | None]:
        """The settled start screen, and the first cause when the start had to be retried."""
        retry = None
        studies = cohort_studies(self.instance.cohort) if self.instance and self.instance.cohort else ()
        with timings.phase("reset"):
            try:
                frame = start_scenario(self.backend, self.scenario, studies)
            except SpecError:
                raise
            except Exception as exc:  # noqa: BLE001 - not only ProgramError: Xlib fails with a bare
                # assertion on a display killed meanwhile. Self-healing: one more try from a new
                # display and fresh processes.
                retry = f"{type(exc).__name__}: {exc}"
                self.backend.close_display()
                try:
                    frame = start_scenario(self.backend, self.scenario, studies)
                except (ProgramError, SpecError):
                    raise
                except Exception as again:
                    # No action was taken yet: a start that failed twice is the infrastructure's.
                    raise ProgramError(f"the start failed twice: {retry}; then "
                                       f"{type(again).__name__}: {again}") from again
        return frame, retry

    def _started(self, frame: Frame, seed: int | None, retry: str | None, timings: Timings,
                 **header: Any) -> tuple[dict, dict[str, Any]]:
        """The first observation and info of an episode on its start screen; its recording starts."""
        obs = self._observe(frame, timings)
        self._start_recording(f"{self.scenario.app}-{self.scenario.id}", self._header(seed, retry, **header))
        return obs, self._public(timings=timings.done(), reset_retry=retry)

    def _header(self, seed: int | None, retry: str | None, **fields) -> EpisodeHeader:
        s = self.scenario
        return EpisodeHeader(
            scenario=s.key, app=s.app, overview=s.overview, n_steps=len(s.steps), coordinates=self.coords.info(),
            steps=[{"instruction": st.instruction, "action": st.action} for st in s.steps], seed=seed,
            backend=self.backend.kind, mode=self.mode, scenario_path=str(s.path), gym_id=s.mode_gym_id(self.mode),
            medspot=s.medspot.model_dump() if s.medspot else None, versions=self.backend.package_versions(),
            reset_retry=retry, pid=os.getpid(), observation=self.obs.name,
            instance=self.instance.seed if self.instance else None, split=self.split, **fields)

    # -- targets, input, settling ---------------------------------------------------------
    def _resolve(self, target, timeout: float) -> Box | None:
        """A target's live box in observation pixels, or None when not found in time."""
        box = poll(lambda: self.backend.resolve(target), timeout=timeout)
        return None if box is None else self.coords.box_to_obs(box)

    def _pointer_obs(self) -> tuple[float, float]:
        return self.coords.to_obs(self.backend.display.pointer())

    def _point_of(self, parsed: act.Action) -> tuple[float, float]:
        """Where an action acts: its point, or the pointer's position for one without (a key)."""
        return parsed.point if parsed.point is not None else self._pointer_obs()

    def _judge(self, step: Step | None, parsed: act.Action | None, target: Box | None,
               end_box: Box | None) -> tuple[bool, bool]:
        """(hit, action type right) of the action against `step` (`clinigym.core.judge`)."""
        if step is None or parsed is None or target is None:
            return False, False
        return judge.judge_action(parsed, self._point_of(parsed), step.action, step.text, target, end_box)

    def _parse_and_judge(self, action: Any, step: Step | None, target: Box | None, end_box: Box | None,
                         timings: Timings) -> tuple[act.Action | None, str | None, dict | None, bool, bool]:
        """The phases parse and judge of a step: (the action or None, why it is invalid, what
        the agent asked to record, hit, action type right)."""
        with timings.phase("parse"):
            parsed, invalid, meta = parse_action(action, self.coords.obs_w, self.coords.obs_h)
        with timings.phase("judge"):
            hit, type_ok = self._judge(step, parsed, target, end_box)
        return parsed, invalid, meta, hit, type_ok

    @staticmethod
    def _step_action(step: Step, target: Box, end_box: Box | None) -> act.Action:
        """The ground-truth action of `step` on its live boxes: their centres."""
        return act.Action(step.action, target.center, end_box.center if end_box else None, step.text)

    def _act(self, parsed: act.Action) -> str | None:
        """Inject the action through XTest; why it could not be, else None."""
        point = self.coords.to_screen(parsed.point) if parsed.point is not None else None
        end = self.coords.to_screen(parsed.end_point) if parsed.end_point is not None else None
        try:
            self.backend.display.perform(parsed.type, point, end, parsed.text, parsed.keys, parsed.scroll)
        except act.InvalidAction as exc:   # an input the display cannot produce (an unknown key)
            return str(exc)
        return None

    def _settle(self, quitting: frozenset[str] = frozenset()) -> tuple[Frame, bool, float, str | None]:
        """(settled frame, settled before the timeout, seconds, why the program stopped)."""
        t = time.monotonic()
        frame, settled = self.backend.settle(since=self._frame)
        return frame, settled, time.monotonic() - t, self.backend.dead(quitting=quitting)

    def _death(self, exc: ProgramError, quitting: frozenset[str] = frozenset()) -> Death:
        """Why the program stopped, for an error raised while an action was taken or settled
        (its display or container gone under it); an error of a program that still runs is
        not its death and is raised again."""
        dead = self.backend.dead(quitting=quitting)
        if dead is None and not isinstance(exc, ProgramDied):
            raise exc
        # Else the X calls said ProgramDied before the backend saw it: the display went, which
        # no action can do.
        return dead or Death(str(exc), infrastructure=True)

    def _transition(self, step: Step, expected: bool, before: Frame, after: Frame) -> tuple[bool, Frame]:
        """Whether every expected condition of `step` holds. For an action expected to cause
        it, wait for it (bounded) and re-settle if the screen moved on meanwhile; otherwise
        look once."""
        def check(frame: Frame) -> bool:
            return all(self._holds(c, before, frame) for c in step.transition)
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

    def _checks_hold(self, timeout: float) -> bool:
        """The scenario's final state checks all hold (waited for, bounded). Each look grabs
        the screen afresh: a `screen` check must see what it waited for."""
        def look() -> bool:
            now = self.backend.display.grab()
            return all(self._holds(c, None, now) for c in self.scenario.check)
        return bool(poll(look, timeout=timeout))

    def _holds(self, cond, before: Frame | None, after: Frame) -> bool:
        """Whether `cond` holds on the program now. A program that cannot answer yet has not
        reached it, and the episode goes on: a page script blocked by a dialog the agent
        opened (DevTools times out) is the agent's to dismiss. A program that died is not
        this: `Abort` goes through, and the step ends on `dead()`."""
        return bool(attempt(lambda: holds(cond, self.backend, before, after, self.app.settle.min_changed)))

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

    def close(self) -> None:
        super().close()
        if self._owns_backend:
            self.backend.close()
