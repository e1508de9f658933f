"""The image size a family's client must send, so that the server cannot shift clicks.

Qwen2-VL, Qwen2.5-VL and the models built on them (UI-TARS, OS-Atlas, UGround-V1,
Aguvis) resize every image with ``smart_resize`` before the vision encoder: both
sides become multiples of ``factor`` (patch 14 x merge 2 = 28) and the area is
brought inside ``[min_pixels, max_pixels]``. Models that answer in absolute pixels
(UI-TARS-1.5, Qwen2.5-VL) answer in pixels of *that* resized image. The client
therefore resizes the screenshot itself to ``smart_resize(h, w)``: the result is a
fixed point of ``smart_resize`` (sides already multiples of 28, area already inside
the budget), so the server's own resize is the identity and the answer is in pixels
of the image the client knows. A server configured with a *smaller* max_pixels than
the client would resize again: give the family the server's budget
(``Family.with_pixels``).

Reimplemented from the definition in qwen-vl-utils
(QwenLM/Qwen2-VL, qwen-vl-utils/src/qwen_vl_utils/vision_process.py), the same
function UI-TARS uses to map its coordinates back
(bytedance/UI-TARS, codes/ui_tars/action_parser.py and README_coordinates.md).
Python's ``round`` (half to even) is kept, as in the original.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

QWEN_FACTOR = 28                 # patch_size 14 x spatial merge 2 (Qwen2-VL, Qwen2.5-VL)
# Qwen3-VL uses patch 16 (factor 32); its coordinates are relative, so that family,
# like every relative-coordinate family, sends the screenshot as is.
MAX_RATIO = 200                  # longest/shortest side beyond which the processors refuse

# qwen-vl-utils MIN_PIXELS / MAX_PIXELS; also the min_pixels / max_pixels of the
# Qwen2-VL-7B-Instruct and Qwen2.5-VL-7B-Instruct image processors (3136, 12845056).
QWEN_MIN_PIXELS = 4 * 28 * 28
QWEN_MAX_PIXELS = 16384 * 28 * 28

# UI-TARS-1.5 maps its coordinates back with MIN_PIXELS = 100*28*28 and
# MAX_PIXELS = 16384*28*28 (bytedance/UI-TARS, codes/ui_tars/action_parser.py).
UI_TARS_MIN_PIXELS = 100 * 28 * 28
UI_TARS_MAX_PIXELS = 16384 * 28 * 28


def smart_resize(height: int, width: int, factor: int = QWEN_FACTOR,
                 min_pixels: int = QWEN_MIN_PIXELS, max_pixels: int = QWEN_MAX_PIXELS) -> tuple[int, int]:
    """(height, width) of the image the Qwen2/2.5-VL processor feeds the model.

    Both sides divisible by ``factor``, area within ``[min_pixels, max_pixels]``,
    aspect ratio kept as closely as possible. Note the argument and result order:
    height first, as in qwen-vl-utils."""
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(f"absolute aspect ratio must be smaller than {MAX_RATIO}, "
                         f"got {max(height, width) / min(height, width):g}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        # max(factor, ...) as in transformers' Qwen2-VL image processor: never a 0 side
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


@dataclass(frozen=True)
class SmartResize:
    """Send the screenshot at its smart_resize size (the model's own input size)."""
    min_pixels: int = QWEN_MIN_PIXELS
    max_pixels: int = QWEN_MAX_PIXELS
    factor: int = QWEN_FACTOR

    def size(self, size: tuple[int, int]) -> tuple[int, int]:
        w, h = size
        rh, rw = smart_resize(h, w, self.factor, self.min_pixels, self.max_pixels)
        return rw, rh

    def describe(self) -> str:
        return (f"smart_resize(factor={self.factor}, min_pixels={self.min_pixels}, "
                f"max_pixels={self.max_pixels})")


@dataclass(frozen=True)
class AsIs:
    """Send the screenshot unchanged (relative coordinates, or a model asked for
    pixels of the size stated in its prompt)."""

    def size(self, size: tuple[int, int]) -> tuple[int, int]:
        w, h = size
        if w <= 0 or h <= 0:
            raise ValueError(f"image size must be positive, got {w}x{h}")
        return int(w), int(h)

    def describe(self) -> str:
        return "as is"
