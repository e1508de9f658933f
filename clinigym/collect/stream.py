"""The live screen for the collection page, grabbed through a private X connection."""
from __future__ import annotations

import io
import threading

import mss
import numpy as np
from PIL import Image


class LiveView:
    """The live screen for the page: JPEG frames grabbed on demand through a private
    X connection, encoded only when the screen changed."""

    def __init__(self, display_name: str, width: int, height: int, quality: int = 80):
        self.display_name = display_name
        self.monitor = {"left": 0, "top": 0, "width": width, "height": height}
        self.quality = quality
        self._lock = threading.Lock()
        self._grabber: mss.base.MSSBase | None = None
        self._last: np.ndarray | None = None
        self._jpeg = b""
        self.seq = 0

    def jpeg(self) -> tuple[bytes, int]:
        with self._lock:
            if self._grabber is None:
                self._grabber = mss.MSS(display=self.display_name)
            shot = self._grabber.grab(self.monitor)
            bgra = np.frombuffer(shot.raw, dtype=np.uint8).reshape(shot.height, shot.width, 4)
            if self._last is None or not np.array_equal(bgra, self._last):
                self._last = bgra.copy()
                buf = io.BytesIO()
                Image.fromarray(np.ascontiguousarray(bgra[:, :, 2::-1])).save(buf, "JPEG", quality=self.quality)
                self._jpeg = buf.getvalue()
                self.seq += 1
            return self._jpeg, self.seq

    def close(self) -> None:
        with self._lock:
            if self._grabber is not None:
                try:
                    self._grabber.close()
                finally:
                    self._grabber = None
