"""Icon crops of the real programs (`containers/<app>/icons/`), found on a screen by template
matching."""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clinigym.agents.ocr.text import STOP_WORDS, _words, same_stem


@dataclass
class Icon:
    name: str
    names: list[list[str]]          # each a list of words that must all be in the instruction
    image: np.ndarray               # BGR
    path: Path


class IconLibrary:
    """Icon crops of the real programs: `<folder>/<label>.png`, synonyms in `<folder>/icons.yaml`
    (`label: {synonyms: [...]}`)."""

    def __init__(self, folders: Iterable[str | Path] = ()):
        import cv2
        import yaml
        self.icons: list[Icon] = []
        for folder in folders:
            folder = Path(folder)
            if not folder.is_dir():
                continue
            meta = {}
            if (folder / "icons.yaml").exists():
                meta = yaml.safe_load((folder / "icons.yaml").read_text()) or {}
            for png in sorted(folder.glob("*.png")):
                label = png.stem
                entry = meta.get(label) or {}
                synonyms = entry.get("synonyms", []) if isinstance(entry, dict) else list(entry)
                names = []
                for phrase in [label.replace("-", " ").replace("_", " "), *synonyms]:
                    every = _words(phrase.replace("-", " "))
                    ws = [w for w in every if w not in STOP_WORDS] or every
                    if ws and ws not in names:
                        names.append(ws)
                image = cv2.imread(str(png), cv2.IMREAD_COLOR)
                if image is not None and names:
                    self.icons.append(Icon(label, names, image, png))

    def __len__(self) -> int:
        return len(self.icons)

    def named(self, words: Sequence[str]) -> list[tuple[Icon, list[str]]]:
        """Icons one of whose names has all its words among `words` (same stem); with the words."""
        words = [w for word in words for w in re.split(r"[-/]", word) if w]
        out = []
        for icon in self.icons:
            for name in icon.names:
                if all(any(same_stem(n, w) for w in words) for n in name):
                    out.append((icon, name))
                    break
        return out

    @staticmethod
    def find(icon: Icon, bgr: np.ndarray, scale: tuple[float, float] = (1.0, 1.0)
             ) -> tuple[float, tuple[float, float, float, float]]:
        """Best normalised cross-correlation of the icon on the image, and where."""
        import cv2
        tmpl = icon.image
        if scale != (1.0, 1.0):
            w = max(4, round(tmpl.shape[1] / scale[0]))
            h = max(4, round(tmpl.shape[0] / scale[1]))
            tmpl = cv2.resize(tmpl, (w, h), interpolation=cv2.INTER_AREA)
        if tmpl.shape[0] > bgr.shape[0] or tmpl.shape[1] > bgr.shape[1]:
            return 0.0, (0, 0, 0, 0)
        res = np.nan_to_num(cv2.matchTemplate(bgr, tmpl, cv2.TM_CCOEFF_NORMED), nan=-1.0)
        _, best, _, (x, y) = cv2.minMaxLoc(res)
        h, w = tmpl.shape[:2]
        return float(best), (float(x), float(y), float(x + w - 1), float(y + h - 1))


def icon_folders(program: str) -> list[Path]:
    """The icon crops of a program of the search path (none for a name that is not one:
    MedSPOT's software names in static mode)."""
    from clinigym.spec.apps import programs
    app = programs().get(program)
    return [app.folder / "icons"] if app else []


