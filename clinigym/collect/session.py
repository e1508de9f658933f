"""One demonstration on one live program: the start state, every forwarded action with
its pre-action screenshot and proposed target box, undo by reset and replay, and the end
(scenario file, oracle replay, dataset) through `clinigym.collect.writer`.

Thread safety: the HTTP server calls in from many threads; everything that touches the
program goes through `self.lock` (one action at a time). The live view grabs the screen
through its own `mss` connection (`LiveView`), never through the display session's.
"""
from __future__ import annotations

import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from PIL import Image

from clinigym.collect import quality
from clinigym.collect.actions import parse_action
from clinigym.collect.errors import ActionError, Conflict
from clinigym.collect.probe import CollectedStep, Probe
from clinigym.collect.stream import LiveView
from clinigym.core.audit import Snapshot
from clinigym.core.screen import Frame, changed_pixels
from clinigym.runtime.slots import owned_folder
from clinigym.spec.apps import AppSpec, load_app
from clinigym.spec.record_sources import snapshot

__all__ = ["ActionError", "CollectSession", "CollectedStep", "Conflict", "parse_action"]


class CollectSession:
    """A demonstration of one task on one program. `backend`: a running backend to share,
    or a backend kind ("local", "docker"; default: see clinigym.runtime.backends)."""

    def __init__(self, app: str | AppSpec, start: Any = None, overview: str = "", backend: Any = None,
                 scenario_dir: Path | None = None, dataset: Path | None = None, parquet: Path | None = None,
                 scenario_id: str | None = None, use_ocr: bool = True, goal: str = ""):
        from clinigym.spec.paths import default_scenario_dir
        from clinigym.spec.scenarios import select
        self.app = app if isinstance(app, AppSpec) else load_app(app)
        if isinstance(start, str):
            found = [s for s in select(start) if s.app == self.app.name]
            if len(found) != 1:
                raise ValueError(f"--scenario {start!r} names {len(found)} {self.app.name} scenarios, not one")
            start = found[0]
        if start is not None and start.app != self.app.name:
            raise ValueError(f"scenario {start.key} is for {start.app}, not {self.app.name}")
        self.start = start
        self.overview = overview or (start.overview if start else "")
        self.goal = goal or (start.goal or "" if start else "")
        self.scenario_id = scenario_id
        self.scenario_dir = Path(scenario_dir) if scenario_dir else default_scenario_dir(self.app.name)
        self.dataset = Path(dataset) if dataset else Path("datasets") / "collected"
        self.parquet = Path(parquet) if parquet else self.dataset / "collected.parquet"
        self.use_ocr = use_ocr
        from clinigym.runtime.backends import Backend, make_backend
        # A running backend is shared (the caller closes it); a kind or None starts one here.
        self._owns_backend = not isinstance(backend, Backend)
        # With its tree where it has one (a shared backend too: `open` restarts the program), so
        # that the clicks recorded are proposed as targets by meaning.
        self.backend = backend if isinstance(backend, Backend) else make_backend(self.app, backend)
        self.backend.accessibility = self.app.accessibility is not None
        # Owned by this process: removed by its guardian (or `clinigym cleanup`) if it ends unclosed.
        self.workdir = owned_folder(f"clinigym-collect-{self.app.name}-")
        self.steps: list[CollectedStep] = []
        self.results: list[dict] = []
        self.lock = threading.RLock()
        self.busy: str | None = None
        self.ended = False
        self.error: str | None = None
        self._devtools = None
        self._ocr_pool = ThreadPoolExecutor(1, thread_name_prefix="collect-ocr")
        self._last: Frame | None = None
        self.view: LiveView | None = None
        # The program's records at the start and after the oracle's replay: what the
        # demonstration changed becomes the task's checks (`clinigym.collect.complete`).
        self.records_before: Snapshot | None = None
        self.replayed: Snapshot | None = None

    # -- geometry and helpers -----------------------------------------------------------
    @property
    def width(self) -> int:
        return self.backend.geometry.width

    @property
    def height(self) -> int:
        return self.backend.geometry.height

    @property
    def display(self):
        return self.backend.display

    @property
    def has_dom(self) -> bool:
        return self.app.dom_port is not None

    def _dom(self, fn, *args, **kwargs):
        """Call a DevTools function; one reconnect when the browser was restarted meanwhile."""
        from clinigym.runtime.browser import DevTools
        if self._devtools is None:
            self._devtools = DevTools(self.backend.ports[self.app.dom_port])
        for attempt in (0, 1):
            try:
                return fn(self._devtools, *args, **kwargs)
            except Exception:  # noqa: BLE001 - the socket of a restarted browser
                self._devtools.close()
                if attempt:
                    raise

    def _windows(self) -> list[str]:
        titles = getattr(self.display, "window_titles", None)
        return list(titles()) if titles else []

    def _settle(self, since: Frame | None = None) -> tuple[Frame, bool]:
        return self.backend.settle(since=since)

    # -- lifecycle ------------------------------------------------------------------------
    def open(self) -> Frame:
        with self.lock:
            frame = self.reset_start()
            self.view = LiveView(self.display.name, self.width, self.height)
            return frame

    def reset_start(self) -> Frame:
        """The pristine program, or the start scenario's args and set-up steps."""
        self.busy = "resetting the program"
        try:
            if self.start is not None:
                from clinigym.envs.start import start_scenario
                frame = start_scenario(self.backend, self.start)
            else:
                frame = self.backend.reset([])
            self._last = frame
            self.records_before = self.read_records()
            return frame
        finally:
            self.busy = None

    def read_records(self) -> Snapshot | None:
        """The program's records now (None for a program that declares none)."""
        return snapshot(self.app.records, self.backend) if self.app.records else None

    def close(self) -> None:
        self._ocr_pool.shutdown(wait=False, cancel_futures=True)
        if self.view:
            self.view.close()
        if self._devtools is not None:
            self._devtools.close()
        if self._owns_backend:
            self.backend.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    # -- state ----------------------------------------------------------------------------
    @property
    def pending(self) -> CollectedStep | None:
        return next((s for s in self.steps if not s.accepted), None)

    def state(self) -> dict:
        return {"mode": "collect", "app": self.app.name, "title": self.app.title,
                "start": self.start.key if self.start else None, "overview": self.overview, "goal": self.goal,
                "scenario_id": self.scenario_id, "screen": [self.width, self.height],
                "busy": self.busy, "error": self.error, "ended": self.ended, "steps": [s.to_json() for s in self.steps],
                "pending": self.pending.index if self.pending else None,
                "results": self.results, "flags": quality.FLAGS,
                "min_changed": self.app.settle.min_changed}

    def image(self, index: int, which: str) -> Path:
        if which not in ("before", "after") or not 0 <= index < len(self.steps):
            raise KeyError(f"no {which} image of step {index}")
        return self.workdir / f"step-{index:03d}-{which}.png"

    # -- actions --------------------------------------------------------------------------
    def _pre_frame(self) -> Frame:
        """The screen the action is made on: the last settled frame if nothing moved since."""
        now = self.display.grab()
        if self._last is not None and changed_pixels(now.raw, self._last.raw) <= self.app.settle.min_changed:
            return self._last
        return self._settle()[0]

    def perform(self, data: Any) -> CollectedStep:
        """Record, propose, forward, settle, refine: one step awaiting acceptance."""
        action = parse_action(data, self.width, self.height)
        if not self.lock.acquire(timeout=0.5):
            raise Conflict(f"busy: {self.busy or 'another action'}")
        try:
            if self.ended:
                raise Conflict("the task has ended: start a new task")
            pending = self.pending
            if pending is not None:
                raise Conflict(f"step {pending.index + 1} awaits acceptance: accept it or undo it first")
            self.busy = f"forwarding {action['type']}"
            return self._perform(action)
        finally:
            self.busy = None
            self.lock.release()

    def _perform(self, action: dict) -> CollectedStep:
        """The phases of `clinigym.collect.probe`: look before, forward, settle, what changed,
        the proposed step."""
        t0 = time.monotonic()
        pre = self._pre_frame()
        index = len(self.steps)
        self._save(pre, index, "before")
        probe = Probe(self, action, pre)
        base = probe.forward()
        t = time.monotonic()
        post, settled = self._settle(since=base)
        probe.timings["settle"] = time.monotonic() - t
        self._last = post
        self._save(post, index, "after")
        step = probe.step(index, post, settled)
        probe.timings["total"] = time.monotonic() - t0
        step.timings = {k: round(v, 3) for k, v in probe.timings.items()}
        self.steps.append(step)
        return step

    def _save(self, frame: Frame, index: int, which: str) -> None:
        Image.fromarray(frame.rgb).save(self.workdir / f"step-{index:03d}-{which}.png", compress_level=1)

    def _inject(self, action: dict) -> None:
        # A `type` carries no point here: it types at the focus (the field was clicked in the step before).
        point = None if action["type"] == "type" else action.get("point")
        self.display.perform(action["type"], point, action.get("end_point"),
                             action.get("text"), action.get("keys"), tuple(action.get("scroll") or (0, 0)))

    # -- the person's decisions -------------------------------------------------------------
    def check(self, index: int, box, instruction: str | None, end_box=None) -> list[str]:
        step = self._step(index)
        box = quality.validate_box(box, self.width, self.height)
        end = quality.validate_box(end_box, self.width, self.height) if end_box is not None else step.end_box
        return quality.step_flags(step.action, box, instruction, step.changed_pixels,
                                  self.app.settle.min_changed, self.width, self.height, end)

    def accept(self, index: int, box, instruction: str | None, end_box=None, force: bool = False) -> dict:
        """Save a step's box and instruction. With quality flags and without `force`, nothing
        is saved and the flags are returned for the person to decide."""
        with self.lock:
            try:
                flags = self.check(index, box, instruction, end_box)
            except ValueError as exc:
                raise ActionError(str(exc)) from None
            step = self._step(index)
            if flags and not force:
                return {"accepted": False, "flags": flags, "reasons": quality.describe(flags)}
            step.box = quality.validate_box(box, self.width, self.height)
            if end_box is not None:
                step.end_box = quality.validate_box(end_box, self.width, self.height)
            step.instruction = (instruction or "").strip()
            step.flags = flags
            step.accepted = True
            return {"accepted": True, "flags": flags, "reasons": quality.describe(flags), "step": step.to_json()}

    def _step(self, index) -> CollectedStep:
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self.steps):
            raise ActionError(f"no step {index!r}; steps: 0..{len(self.steps) - 1}")
        return self.steps[index]

    def undo(self) -> dict:
        """Drop the last step: reset to the start state and replay the kept steps."""
        with self.lock:
            if self.ended:
                raise Conflict("the task has ended: start a new task")
            if not self.steps:
                raise Conflict("nothing to undo")
            dropped = self.steps.pop()
            self._restore()
            for which in ("before", "after"):
                (self.workdir / f"step-{dropped.index:03d}-{which}.png").unlink(missing_ok=True)
            return {"undone": dropped.index, "steps": len(self.steps)}

    def _restore(self) -> None:
        """Reset to the start state and replay the kept steps' actions."""
        self.reset_start()
        self.busy = f"replaying {len(self.steps)} kept steps"
        try:
            frame = self._last
            for step in self.steps:
                self._inject(step.action)
                frame, _ = self._settle(since=frame)
            self._last = frame
        finally:
            self.busy = None

    def new_task(self, overview: str | None = None) -> dict:
        with self.lock:
            self.steps.clear()
            self.ended = False
            if overview is not None:
                self.overview = overview
            self.scenario_id = None
            self.reset_start()
            return {"steps": 0}

    def end(self, overview: str | None = None, scenario_id: str | None = None, goal: str | None = None) -> dict:
        """Write the scenario, replay it with the oracle, derive its checks and safety
        declaration from the records it changed, append it to the dataset."""
        from clinigym.collect import writer
        with self.lock:
            if self.ended:
                raise Conflict("the task has ended already: start a new task")
            if overview is not None:
                self.overview = overview
            if scenario_id:
                self.scenario_id = scenario_id
            if goal is not None:
                self.goal = goal
            self.busy = "writing the scenario and replaying it with the oracle"
            try:
                result = writer.finish(self)
            finally:
                self.busy = None
            self.results.append(result)
            if result["status"] == "complete":
                self.ended = True
            else:   # back to the demonstrated state, so the steps can be fixed and the task ended again
                self._restore()
            return result
