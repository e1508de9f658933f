"""``Family``: everything the client needs to talk to one model family.

A family is data: a prompt builder, a resize policy, a native coordinate ``Space``, a
``Syntax`` to find coordinates in the answer and a writer for the inverse. Families
that share a convention share the same pieces.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from clinigym.agents.families.coords import Point, Size, Space, centre, inside
from clinigym.agents.families.observed import Marks, named_marks, shown
from clinigym.agents.families.prompts import Prompt
from clinigym.agents.families.resize import AsIs, SmartResize
from clinigym.agents.families.syntax import Syntax
from clinigym.agents.families.thinking import strip_think
from clinigym.core.marks import Mark

PromptBuilder = Callable[[str, Size, str], Prompt]
Writer = Callable[[list[Point], Space], str]


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    coords: str                  # the native coordinate convention, in words
    space: Space
    resize: SmartResize | AsIs
    prompt: PromptBuilder
    syntax: Syntax
    writer: Writer
    sources: tuple[str, ...] = ()
    mark_hint: str | None = None   # how it names a mark in the som mode (`observed`); None: it cannot

    def resize_for(self, size: Size) -> Size:
        """(w, h) to which the client resizes a (w, h) observation before sending."""
        return self.resize.size(size)

    def build_messages(self, instruction: str, size: Size, image_url: str | None, text: str | None = None) -> Prompt:
        """The request for one step: ``size`` is the observation's (w, h); ``image_url``
        the data URL of the screenshot already resized to ``resize_for(size)``, None when
        the observation has none; ``text`` what else it shows (`observed.Observed.text`)."""
        prompt = self.prompt(instruction, self.resize_for(size), image_url or "")
        return shown(prompt, image_url is not None, text)

    def parse(self, text: str, size: Size) -> list[Point]:
        """Points in observation pixels, best first; [] when nothing parsable.
        A point outside the observation is dropped, never clamped (each point on its
        own, as ``clinigym.eval.predictions`` drops out-of-range points of a top-K list)."""
        sent = self.resize_for(size)
        out = []
        for group in self.syntax.extract(strip_think(text or "")):
            point = self.space.to_observation(centre(group), size, sent)
            if inside(point, size):
                out.append(point)
        return out

    def named_marks(self, text: str, marks: Marks) -> tuple[list[Mark], list[str]]:
        """The marks the answer names in the som mode, in order, and why each other number it
        names is no mark; none when the family has no way to name one."""
        return named_marks(strip_think(text or ""), marks) if self.mark_hint else ([], [])

    def format_answer(self, points: list[Point], size: Size) -> str:
        """The family's native answer text for observation points (inverse of parse,
        up to the family's precision: see ``quantum``)."""
        sent = self.resize_for(size)
        return self.writer([self.space.quantise(p, size, sent) for p in points], self.space)

    def quantum(self, size: Size) -> Point:
        """Observation pixels per smallest native step: format_answer -> parse is
        exact to within half of this (within one step at the far edge)."""
        return self.space.quantum(size, self.resize_for(size))

    def with_pixels(self, min_pixels: int | None = None, max_pixels: int | None = None) -> Family:
        """The same family with another smart_resize budget (match the server's)."""
        if not isinstance(self.resize, SmartResize):
            raise ValueError(f"family {self.name!r} sends the screenshot as is; it has no pixel budget")
        resize = dataclasses.replace(
            self.resize,
            min_pixels=self.resize.min_pixels if min_pixels is None else int(min_pixels),
            max_pixels=self.resize.max_pixels if max_pixels is None else int(max_pixels))
        return dataclasses.replace(self, resize=resize)
