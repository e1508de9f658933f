"""The virtual screen's size: what a display is started with (`clinigym.runtime.display`)
and what `clinigym run --screen WxH` and the environments' `geometry=` ask for."""
from __future__ import annotations

import re
from dataclasses import dataclass

# Sizes a screen may have: room for the programs' windows; Xvfb's memory grows with the area.
MIN_SCREEN, MAX_SCREEN = (640, 480), (7680, 4320)


@dataclass(frozen=True)
class Geometry:
    """The virtual screen: size in pixels (the library's pixel boxes are 1920x1080's), depth."""
    width: int = 1920
    height: int = 1080
    depth: int = 24

    def __post_init__(self):
        for i, name in enumerate(("width", "height")):
            value = getattr(self, name)
            if type(value) is not int or not MIN_SCREEN[i] <= value <= MAX_SCREEN[i]:
                raise ValueError(f"screen {name} {value!r}: a whole number of pixels from {MIN_SCREEN[i]} "
                                 f"to {MAX_SCREEN[i]}")

    @classmethod
    def parse(cls, text: str) -> Geometry:
        """From `WIDTHxHEIGHT` (as `clinigym run --screen 1280x800`)."""
        if not (match := re.fullmatch(r"(\d+)x(\d+)", text.strip().lower())):
            raise ValueError(f"screen size {text!r}: expected WIDTHxHEIGHT in pixels, e.g. 1280x800")
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.width}x{self.height}"
