"""The OCR grounding agent: a real, model-free agent that needs no network and no GPU.

It reads the screenshot with OCR (RapidOCR's bundled PP-OCR ONNX models on the
CPU), matches the step instruction to the text on the screen and clicks the
centre of the best match. Icons without text are found by template matching
(normalised cross-correlation) against icon crops captured from the real
programs (`containers/<app>/icons/<label>.png`, optional `icons.yaml` with
synonyms). When nothing matches well enough it returns a click without a
point (scored `no_prediction`) instead of a guess.

It sees what any agent sees: the observation (screenshot and instruction) and
the step's public `info` (only the coordinate scale is read, to scale icon
crops to a scaled observation). From its context it takes the program's name,
to find that program's icon crops.

Grounding order for one instruction:

1. quoted target labels (`'...'`, `"..."`, `‘...’`, `“...”`) found as text, fuzzy
   (OCR-confusable characters are cheap: Eile/File, Qpen/Open), exact for one-
   and two-letter labels ('OK'); a label may be part of a box or span two
   adjacent boxes. Quoted containers ("from the 'Browser' menu") are context,
   not targets. "confirm" without a quoted label means 'OK' or 'Yes';
2. quoted labels found as icons;
3. the instruction's content words (stop words, purpose clauses "to ..." and
   container phrases "from the ... toolbar" removed), weighted so that rare
   words count more than words seen in many boxes or generic ones (image,
   study, patient, ...), scored against every text box and against the icons
   the words name.
"""
from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from clinigym.agents.ocr.icons import Icon, IconLibrary, icon_folders
from clinigym.agents.ocr.matching import ICON_THRESHOLD, ICON_THRESHOLD_SCALED, Decision, ground
from clinigym.agents.ocr.text import TextBox, parse_instruction
from clinigym.core.actions import Action
from clinigym.core.context import AgentContext

# -- OCR engine ------------------------------------------------------------------------------
_ENGINE = None
_ENGINE_LOCK = threading.Lock()


def rapidocr_engine():
    """One RapidOCR engine per process (loading the models takes about a second)."""
    global _ENGINE
    with _ENGINE_LOCK:
        if _ENGINE is None:
            from rapidocr import RapidOCR
            _ENGINE = RapidOCR(params={"Global.log_level": "warning"})
        return _ENGINE


def run_ocr(rgb: np.ndarray) -> list[TextBox]:
    """RapidOCR on an RGB image: text boxes with axis-aligned boxes."""
    result = rapidocr_engine()(np.ascontiguousarray(rgb[:, :, ::-1]))
    if result.boxes is None or result.txts is None:
        return []
    out = []
    for text, quad, score in zip(result.txts, result.boxes, result.scores):
        q = np.asarray(quad, dtype=float).reshape(-1, 2)
        out.append(TextBox(str(text), (float(q[:, 0].min()), float(q[:, 1].min()),
                                       float(q[:, 0].max()), float(q[:, 1].max())), float(score)))
    return out


# -- the agent -------------------------------------------------------------------------------
class OcrAgent:
    """OCR + fuzzy text matching + icon template matching; no network, no GPU, no privileges.

    `icons`: folders of icon crops (default: `containers/<app>/icons` of the context's
    program, or of `app`). `ocr`: a function RGB array -> list[TextBox] (default RapidOCR).
    """

    name = "ocr"

    def __init__(self, context: AgentContext | None = None, seed: int | None = None,
                 icons: Iterable[str | Path] | None = None, app: str | None = None,
                 ocr: Callable[[np.ndarray], list[TextBox]] | None = None, cache_size: int = 8):
        if icons is None:
            program = app or (context.program if context is not None else None)
            icons = icon_folders(program) if program else []
        self.icons = IconLibrary(icons)
        self.ocr = ocr or run_ocr
        self.cache_size = cache_size
        self._cache: OrderedDict[str, list[TextBox]] = OrderedDict()
        self.seed = seed

    def reset(self, seed: int | None = None) -> None:
        pass   # deterministic; the OCR cache is kept (same screens, same text)

    def read(self, rgb: np.ndarray) -> tuple[list[TextBox], float, bool]:
        """OCR of a screenshot, cached by a hash of its pixels: (boxes, seconds, cached)."""
        key = hashlib.blake2b(np.ascontiguousarray(rgb).tobytes(), digest_size=16,
                              person=str(rgb.shape).encode()[:16]).hexdigest()
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key], 0.0, True
        t = time.monotonic()
        boxes = self.ocr(rgb)
        elapsed = time.monotonic() - t
        self._cache[key] = boxes
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return boxes, elapsed, False

    def decide(self, screenshot: np.ndarray, instruction: str,
               scale: tuple[float, float] = (1.0, 1.0)) -> tuple[Decision, dict]:
        t0 = time.monotonic()
        intent = parse_instruction(instruction)
        boxes, ocr_time, cached = ([], 0.0, False) if intent.action == "type" else self.read(screenshot)
        bgr = None
        icon_time = [0.0]

        found: dict[str, tuple] = {}

        def find_icon(icon: Icon):
            nonlocal bgr
            if icon.name not in found:
                t = time.monotonic()
                if bgr is None:
                    bgr = np.ascontiguousarray(screenshot[:, :, ::-1])
                found[icon.name] = IconLibrary.find(icon, bgr, scale)
                icon_time[0] += time.monotonic() - t
            return found[icon.name]

        threshold = ICON_THRESHOLD if scale == (1.0, 1.0) else ICON_THRESHOLD_SCALED
        decision = ground(intent, boxes, find_icon, self.icons if len(self.icons) else None, threshold)
        meta = {"agent": self.name, "source": decision.source, "matched": decision.matched,
                "score": decision.score, "query": decision.query, "tier": decision.tier,
                "action_type": decision.action, "labels": intent.labels, "context": intent.context,
                "implicit": intent.implicit, "words": intent.words, "n_words": len(boxes),
                "ocr_time": round(ocr_time, 4), "ocr_cached": cached, "icon_time": round(icon_time[0], 4),
                "time": round(time.monotonic() - t0, 4), "candidates": decision.candidates}
        return decision, meta

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Action:
        scale = tuple((info or {}).get("coordinates", {}).get("scale") or (1.0, 1.0))
        decision, meta = self.decide(observation["screenshot"], str(observation.get("instruction", "")),
                                     (float(scale[0]), float(scale[1])))
        if decision.action == "type":
            return Action("type", None, text=decision.text, meta=meta)
        return Action(decision.action, decision.point, meta=meta)
