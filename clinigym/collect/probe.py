"""One forwarded action of a collection session, phase by phase: what is under the point
before it (the DOM element, the OCR text, in the background), forwarding it while watching
the element's own feedback (hover, press), what changed after it settled, and the proposed
step awaiting the person's acceptance (`CollectedStep`). The session (`clinigym.collect.
session`) holds the lock, saves the screenshots and settles between the phases."""
from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from clinigym.collect import proposals as prop
from clinigym.collect.actions import suggest
from clinigym.collect.boxes import area_fraction, contains
from clinigym.collect.errors import ActionError
from clinigym.collect.press import press_probe
from clinigym.core.elements import Tree
from clinigym.core.errors import InvalidAction
from clinigym.core.naming import name_point
from clinigym.core.screen import Frame, changed_pixels

if TYPE_CHECKING:
    from clinigym.collect.session import CollectSession


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


class Probe:
    """The evidence one action gathers; candidates are kept in the order the proposals rank
    ties (`proposals.best`)."""

    def __init__(self, session: CollectSession, action: dict, pre: Frame):
        self.s, self.action, self.pre = session, action, pre     # pre: the screen the action is made on
        self.point, self.kind = action.get("point"), action["type"]
        self.candidates: list[prop.Proposal] = []
        self.end_proposal: prop.Proposal | None = None
        self.timings: dict[str, float] = {}
        self.windows_before = session._windows()
        self.landmarks_before: dict = {}
        self.ocr: Future | None = None                  # the OCR of `pre`, running in the background
        self._look_before()

    def _look_before(self) -> None:
        """The DOM box (browser programs), or the OCR started (the others); the element the
        program's tree has under the point (programs with accessibility on)."""
        s = self.s
        if s.backend.accessibility and not s.has_dom and self.point is not None:
            t = time.monotonic()
            tree = s.backend.elements()
            most = prop.MAX_AREA_FRACTION * s.width * s.height
            found = _element_at(tree, self.point, most)
            if found is not None:
                self.candidates.append(found)
            if self.kind == "drag":
                self.end_proposal = _element_at(tree, self.action["end_point"], most)
            self.timings["elements"] = time.monotonic() - t
        if s.has_dom:
            t = time.monotonic()
            self.landmarks_before = s._dom(prop.dom_landmarks)
            if self.point is not None:
                dom = s._dom(prop.dom_at, self.point, self.kind == "type")
                if dom is not None:
                    self.candidates.append(dom)
            if self.kind == "drag":
                self.end_proposal = s._dom(prop.dom_at, self.action["end_point"])
            self.timings["dom"] = time.monotonic() - t
        if not s.has_dom and s.use_ocr and self.point is not None:
            from clinigym.agents.ocr import run_ocr
            self.ocr = s._ocr_pool.submit(run_ocr, self.pre.rgb)

    def forward(self) -> Frame:
        """Forward the action, watching a pixel program's element for its own hover and press
        feedback; the frame the settling starts from."""
        s, pre, point = self.s, self.pre, self.point
        t = time.monotonic()
        base = pre
        try:
            if not s.has_dom and point is not None and self.kind != "type":
                s.display.move(*point)
                base, _ = s._settle(since=pre)
                hover = prop.feedback_box(pre.bgra, base.bgra, point)
                if hover:
                    self.candidates.append(prop.Proposal("hover", hover))
            if not s.has_dom and self.kind == "click":
                press = press_probe(s.backend, point, base)
                if press:
                    self.candidates.append(prop.Proposal("press", press))
            else:
                s._inject(self.action)
        except InvalidAction as exc:   # an input the display cannot produce
            raise ActionError(str(exc)) from None
        self.timings["inject"] = time.monotonic() - t
        return base

    def _changes(self, post: Frame) -> tuple[int, list[list[int]]]:
        """The changed pixels and regions; on a pixel program, the highlighted box and the
        smallest changed region around the point as candidates."""
        s, pre, point = self.s, self.pre, self.point
        n_changed = changed_pixels(pre.raw, post.raw)
        regions = prop.changed_regions(pre.bgra, post.bgra) if n_changed else []
        if point is not None and n_changed and not s.has_dom:
            high = prop.highlight_box(pre.bgra, post.bgra, point)
            if high:
                self.candidates.append(prop.Proposal("changed", high))
            region = next((r for r in sorted(regions, key=lambda r: (r[2] - r[0]) * (r[3] - r[1]))
                           if contains(r, point, prop.CONTAIN_MARGIN)
                           and area_fraction(r, s.width, s.height) <= prop.MAX_AREA_FRACTION), None)
            if region:
                self.candidates.append(prop.Proposal("region", region))
        return n_changed, regions

    def _dom_changes(self) -> tuple[list[str], list[str]]:
        """The page landmarks that appeared and that went (browser programs)."""
        if not self.s.has_dom:
            return [], []
        after, before = self.s._dom(prop.dom_landmarks), self.landmarks_before
        return [k for k in after if k not in before], [k for k in before if k not in after]

    def _ocr_candidate(self) -> None:
        if self.ocr is None:
            return
        t = time.monotonic()
        found = prop.ocr_box(self.ocr.result(timeout=120), self.point)
        self.timings["ocr"] = time.monotonic() - t
        if found:
            self.candidates.append(prop.Proposal("ocr", found[0], label=found[1]))

    def _proposal(self) -> tuple[prop.Proposal, prop.Proposal | None]:
        """The best candidate box (the point's added last) with a label, and the drag's end."""
        s, candidates = self.s, self.candidates
        if self.point is not None:
            candidates.append(prop.Proposal("point", prop.point_box(self.point, s.width, s.height)))
        end_proposal = self.end_proposal
        if self.kind == "drag" and end_proposal is None:
            end_proposal = prop.Proposal("point", prop.point_box(self.action["end_point"], s.width, s.height))
        proposal = prop.best(candidates, self.kind) if candidates else None
        if proposal is None:   # key actions: no point, no element
            proposal = prop.Proposal("none", [0, 0, s.width - 1, s.height - 1])
        if proposal.label is None:    # a text for the instruction: the OCR line under the point
            proposal.label = next((c.label for c in candidates if c.source == "ocr" and c.label), None)
        return proposal, end_proposal

    def step(self, index: int, post: Frame, settled: bool) -> CollectedStep:
        """The step awaiting acceptance, from the settled screen after the action."""
        n_changed, regions = self._changes(post)
        windows_after = self.s._windows()
        dom_new, dom_gone = self._dom_changes()
        self._ocr_candidate()
        proposal, end_proposal = self._proposal()
        step = CollectedStep(
            index, self.action, self.candidates, proposal, end_proposal, n_changed, settled,
            suggest(self.action, proposal),
            windows_new=[w for w in windows_after if w not in self.windows_before],
            windows_gone=[w for w in self.windows_before if w not in windows_after],
            dom_new=dom_new, dom_gone=dom_gone, regions=regions[:20])
        step.box = list(proposal.box)
        step.end_box = list(end_proposal.box) if end_proposal else None
        return step


def _element_at(tree: Tree, point, max_area: float) -> prop.Proposal | None:
    """The `element` proposal for the point: the interactive element there, named alone."""
    naming = name_point(tree, (float(point[0]), float(point[1])), max_area)
    if naming.element is None or naming.element.box is None:
        return None
    return prop.Proposal("element", naming.element.box.as_list(), label=naming.element.name or None,
                         element=naming.target_data())
