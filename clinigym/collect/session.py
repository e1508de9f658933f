"""One demonstration on one live program: the start state, every forwarded action with
its pre-action screenshot and proposed target box, undo by reset and replay, and the end
(scenario file, oracle replay, dataset) through `clinigym.collect.writer`.

Thread safety: the HTTP server calls in from many threads; everything that touches the
program goes through `self.lock` (one action at a time). The live view grabs the screen
through its own `mss` connection (`LiveView`), never through the display session's.
"""
from __future__ import annotations

import shutil
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from clinigym.collect import proposals as prop
from clinigym.collect import quality
from clinigym.collect.actions import parse_action, suggest
from clinigym.collect.boxes import area_fraction, contains
from clinigym.collect.errors import ActionError, Conflict
from clinigym.collect.press import press_probe
from clinigym.collect.stream import LiveView
from clinigym.core.errors import InvalidAction
from clinigym.core.screen import Frame, changed_pixels
from clinigym.spec.apps import AppSpec, load_app

__all__ = ["ActionError", "CollectSession", "CollectedStep", "Conflict"]


@dataclass
class CollectedStep:
    index: int
    action: dict                               # type, point, end_point, text, keys, scroll
    candidates: list[prop.Proposal]
    proposal: prop.Proposal
    end_proposal: prop.Proposal | None
    changed_pixels: int
    settled: bool
    suggestion: str
    windows_new: list[str] = field(default_factory=list)
    windows_gone: list[str] = field(default_factory=list)
    dom_new: list[str] = field(default_factory=list)
    dom_gone: list[str] = field(default_factory=list)
    regions: list[list[int]] = field(default_factory=list)   # changed regions, largest first
    box: list[float] | None = None             # the accepted box
    end_box: list[float] | None = None
    instruction: str | None = None
    flags: list[str] = field(default_factory=list)
    accepted: bool = False
    timings: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"index": self.index, "action": self.action,
                "candidates": [c.to_json() for c in self.candidates],
                "proposal": self.proposal.to_json(),
                "end_proposal": self.end_proposal.to_json() if self.end_proposal else None,
                "changed_pixels": self.changed_pixels, "settled": self.settled, "suggestion": self.suggestion,
                "windows_new": self.windows_new, "windows_gone": self.windows_gone,
                "dom_new": self.dom_new, "dom_gone": self.dom_gone, "regions": self.regions[:5],
                "box": self.box, "end_box": self.end_box, "instruction": self.instruction,
                "flags": self.flags, "accepted": self.accepted, "timings": self.timings,
                "before": f"step-{self.index:03d}-before.png", "after": f"step-{self.index:03d}-after.png"}


class CollectSession:
    """A demonstration of one task on one program. `backend`: a running backend to share,
    or a backend kind ("local", "docker"; default: see clinigym.runtime.backends)."""

    def __init__(self, app: str | AppSpec, start: Any = None, overview: str = "", backend: Any = None,
                 scenario_dir: Path | None = None, dataset: Path | None = None, parquet: Path | None = None,
                 scenario_id: str | None = None, use_ocr: bool = True):
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
        self.scenario_id = scenario_id
        self.scenario_dir = Path(scenario_dir) if scenario_dir else default_scenario_dir(self.app.name)
        self.dataset = Path(dataset) if dataset else Path("datasets") / "collected"
        self.parquet = Path(parquet) if parquet else self.dataset / "collected.parquet"
        self.use_ocr = use_ocr
        from clinigym.runtime.backends import Backend, make_backend
        # A running backend is shared (the caller closes it); a kind or None starts one here.
        self._owns_backend = not isinstance(backend, Backend)
        self.backend = backend if isinstance(backend, Backend) else make_backend(self.app, backend)
        self.workdir = Path(tempfile.mkdtemp(prefix=f"clinigym-collect-{self.app.name}-"))
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
            frame = self._reset_start()
            self.view = LiveView(self.display.name, self.width, self.height)
            return frame

    def _reset_start(self) -> Frame:
        """The pristine program, or the start scenario's args and set-up steps."""
        self.busy = "resetting the program"
        try:
            if self.start is not None:
                from clinigym.envs.start import start_scenario
                frame = start_scenario(self.backend, self.start)
            else:
                frame = self.backend.reset([])
            self._last = frame
            return frame
        finally:
            self.busy = None

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
                "start": self.start.key if self.start else None, "overview": self.overview,
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
        t0 = time.monotonic()
        timings: dict[str, float] = {}
        pre = self._pre_frame()
        index = len(self.steps)
        Image.fromarray(pre.rgb).save(self.workdir / f"step-{index:03d}-before.png", compress_level=1)
        point = action.get("point")
        kind = action["type"]
        candidates: list[prop.Proposal] = []
        end_proposal = None
        windows_before = self._windows()
        landmarks_before: dict = {}
        # 1. before forwarding: the DOM box (browser programs), the OCR text box (others, in the background)
        if self.has_dom:
            t = time.monotonic()
            landmarks_before = self._dom(prop.dom_landmarks)
            if point is not None:
                dom = self._dom(prop.dom_at, point, kind == "type")
                if dom is not None:
                    candidates.append(dom)
            if kind == "drag":
                end_proposal = self._dom(prop.dom_at, action["end_point"])
            timings["dom"] = time.monotonic() - t
        ocr: Future | None = None
        if not self.has_dom and self.use_ocr and point is not None:
            from clinigym.agents.ocr import run_ocr
            ocr = self._ocr_pool.submit(run_ocr, pre.rgb)
        # 2. forward, watching the element's own feedback on pixel programs
        t = time.monotonic()
        base = pre
        try:
            if not self.has_dom and point is not None and kind != "type":
                self.display.move(*point)
                base, _ = self._settle(since=pre)
                hover = prop.feedback_box(pre.bgra, base.bgra, point)
                if hover:
                    candidates.append(prop.Proposal("hover", hover))
            if not self.has_dom and kind == "click":
                press = press_probe(self.backend, point, base)
                if press:
                    candidates.append(prop.Proposal("press", press))
            else:
                self._inject(action)
        except InvalidAction as exc:   # an input the display cannot produce
            raise ActionError(str(exc)) from None
        timings["inject"] = time.monotonic() - t
        t = time.monotonic()
        post, settled = self._settle(since=base)
        timings["settle"] = time.monotonic() - t
        self._last = post
        Image.fromarray(post.rgb).save(self.workdir / f"step-{index:03d}-after.png", compress_level=1)
        # 3. what changed
        n_changed = changed_pixels(pre.raw, post.raw)
        regions = prop.changed_regions(pre.bgra, post.bgra) if n_changed else []
        if point is not None and n_changed and not self.has_dom:
            high = prop.highlight_box(pre.bgra, post.bgra, point)
            if high:
                candidates.append(prop.Proposal("changed", high))
            region = next((r for r in sorted(regions, key=lambda r: (r[2] - r[0]) * (r[3] - r[1]))
                           if contains(r, point, prop.CONTAIN_MARGIN)
                           and area_fraction(r, self.width, self.height) <= prop.MAX_AREA_FRACTION), None)
            if region:
                candidates.append(prop.Proposal("region", region))
        windows_after = self._windows()
        dom_new, dom_gone = [], []
        if self.has_dom:
            landmarks_after = self._dom(prop.dom_landmarks)
            dom_new = [s for s in landmarks_after if s not in landmarks_before]
            dom_gone = [s for s in landmarks_before if s not in landmarks_after]
        if ocr is not None:
            t = time.monotonic()
            found = prop.ocr_box(ocr.result(timeout=120), point)
            timings["ocr"] = time.monotonic() - t
            if found:
                candidates.append(prop.Proposal("ocr", found[0], label=found[1]))
        if point is not None:
            candidates.append(prop.Proposal("point", prop.point_box(point, self.width, self.height)))
        if kind == "drag" and end_proposal is None:
            end_proposal = prop.Proposal("point", prop.point_box(action["end_point"], self.width, self.height))
        proposal = prop.best(candidates, kind) if candidates else None
        if proposal is None:   # key actions: no point, no element
            proposal = prop.Proposal("none", [0, 0, self.width - 1, self.height - 1])
        if proposal.label is None:    # a text for the instruction: the OCR line under the point
            proposal.label = next((c.label for c in candidates if c.source == "ocr" and c.label), None)
        step = CollectedStep(
            index, action, candidates, proposal, end_proposal, n_changed, settled, suggest(action, proposal),
            windows_new=[w for w in windows_after if w not in windows_before],
            windows_gone=[w for w in windows_before if w not in windows_after],
            dom_new=dom_new, dom_gone=dom_gone, regions=regions[:20])
        step.box = list(proposal.box)
        step.end_box = list(end_proposal.box) if end_proposal else None
        timings["total"] = time.monotonic() - t0
        step.timings = {k: round(v, 3) for k, v in timings.items()}
        self.steps.append(step)
        return step

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
        self._reset_start()
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
            self._reset_start()
            return {"steps": 0}

    def end(self, overview: str | None = None, scenario_id: str | None = None) -> dict:
        """Write the scenario, replay it with the oracle, append it to the dataset."""
        from clinigym.collect import writer
        with self.lock:
            if self.ended:
                raise Conflict("the task has ended already: start a new task")
            if overview is not None:
                self.overview = overview
            if scenario_id:
                self.scenario_id = scenario_id
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
