"""Grounding an intent on one screen: quoted labels and content words matched to OCR text
boxes, icons found by template matching; the best candidate. Pure apart from the icon finder."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from clinigym.agents.ocr.icons import Icon, IconLibrary
from clinigym.agents.ocr.text import GENERIC_WORDS, Intent, TextBox, _words, normalize, similarity, tokens

# -- thresholds ---------------------------------------------------------------------------
LABEL_THRESHOLD = 0.80      # quoted label vs text (after the partial-box penalty)
WORD_THRESHOLD = 0.80       # one content word vs one OCR token
ICON_THRESHOLD = 0.90       # normalised cross-correlation of an icon crop
ICON_THRESHOLD_SCALED = 0.85  # ... when the observation is scaled (the crop is resampled)
CONTENT_THRESHOLD = 0.35    # weighted content-word score of the best candidate
TIE = 0.02                  # candidates this close are ties (ordinals and reading order decide)
MIN_OCR_SCORE = 0.5         # OCR boxes recognised with less confidence are ignored


@dataclass
class Candidate:
    point: tuple[float, float]
    score: float
    source: str                     # "ocr" or "icon"
    matched: str                    # the text or icon name matched
    query: str                      # the label or words it was matched for
    box: tuple[float, float, float, float]

    @property
    def order(self) -> tuple[float, float]:     # reading order
        return (round(self.box[1] / 8), self.box[0])


@dataclass
class Decision:
    action: str
    point: tuple[float, float] | None
    text: str | None
    source: str                                  # "ocr", "icon", "focus" (type), "none"
    matched: str | None = None
    score: float | None = None
    query: str | None = None
    tier: str | None = None                      # "label", "label-icon", "words"
    candidates: list[dict] = field(default_factory=list)


# -- OCR boxes -------------------------------------------------------------------------------
@dataclass
class _Line:
    """A text box prepared for matching (or two adjacent boxes of one line joined)."""
    text: str            # normalised
    toks: list[tuple[str, int, int]]
    box: tuple[float, float, float, float]
    raw: str

    def span_box(self, start: int, end: int) -> tuple[float, float, float, float]:
        """The approximate box of characters [start, end) (proportional to the character count)."""
        x1, y1, x2, y2 = self.box
        n = max(1, len(self.text))
        return (x1 + (x2 - x1) * start / n, y1, x1 + (x2 - x1) * end / n, y2)


def _lines(boxes: Sequence[TextBox], join: bool) -> list[_Line]:
    good = [b for b in boxes if b.score >= MIN_OCR_SCORE and b.text.strip()]
    out = []
    for b in good:
        text = normalize(b.text)
        out.append(_Line(text, tokens(text), tuple(map(float, b.box)), b.text))
    if join:   # a label split over two OCR boxes of one line: join neighbours
        for a in good:
            ax1, ay1, ax2, ay2 = a.box
            right = [b for b in good if b is not a and b.box[0] >= ax2 - 2
                     and min(ay2, b.box[3]) - max(ay1, b.box[1]) > 0.5 * min(ay2 - ay1, b.box[3] - b.box[1])
                     and b.box[0] - ax2 < 1.5 * (ay2 - ay1)]
            if right:
                b = min(right, key=lambda r: r.box[0])
                text = normalize(a.text + " " + b.text)
                box = (ax1, min(ay1, b.box[1]), b.box[2], max(ay2, b.box[3]))
                out.append(_Line(text, tokens(text), box, f"{a.text} {b.text}"))
    return out


def _center(box) -> tuple[float, float]:
    return (round((box[0] + box[2]) / 2, 1), round((box[1] + box[3]) / 2, 1))


def match_label(label: str, boxes: Sequence[TextBox]) -> list[Candidate]:
    """Every box's best match of one label (whole box, a span of its words, or a substring),
    scored by similarity and penalised when the label is only a small part of the box."""
    lab = normalize(label)
    lab_toks = [w for w, _, _ in tokens(lab)]
    if not lab_toks:
        return []
    lab = " ".join(lab_toks)
    k = len(lab_toks)
    out = []
    for line in _lines(boxes, join=True):
        if not line.toks:
            continue
        best = (0.0, 0, 0)
        for n in range(max(1, k - 1), k + 2):
            for i in range(0, len(line.toks) - n + 1):
                span = line.toks[i:i + n]
                s = similarity(lab, " ".join(w for w, _, _ in span))
                if s > best[0]:
                    best = (s, span[0][1], span[-1][2])
        if len(lab) >= 4 and best[0] < 1.0:
            pos = line.text.find(lab)
            if pos >= 0:
                best = (1.0, pos, pos + len(lab))
        s, start, end = best
        coverage = (end - start) / max(1, len(line.text))
        score = s * (0.85 + 0.15 * min(1.0, coverage))
        if score >= LABEL_THRESHOLD:
            box = line.span_box(start, end)
            out.append(Candidate(_center(box), round(score, 4), "ocr", line.raw, label, box))
    return out


def word_weights(words: Sequence[str], lines: Sequence[_Line]) -> tuple[dict, dict]:
    """Per word: the lines it matches (token similarity) and its weight, rarer = heavier."""
    hits: dict[str, dict[int, tuple[float, int, int]]] = {}
    for w in words:
        hits[w] = {}
        for li, line in enumerate(lines):
            best = None
            for tok, start, end in line.toks:
                s = similarity(w, tok)
                if s >= WORD_THRESHOLD and (best is None or s > best[0]):
                    best = (s, start, end)
            if best:
                hits[w][li] = best
    weights = {}
    for w in words:
        base = 0.4 if w in GENERIC_WORDS else 1.0
        n = max(1, len(hits[w]))
        weights[w] = base / (1 + 0.5 * math.log(n))
    return hits, weights


def match_words(words: Sequence[str], boxes: Sequence[TextBox]) -> tuple[list[Candidate], dict]:
    """Text boxes scored by the weighted content words they contain."""
    if not words:
        return [], {}
    lines = _lines(boxes, join=False)
    hits, weights = word_weights(words, lines)
    out = []
    for li, line in enumerate(lines):
        matched = [(w, hits[w][li]) for w in words if li in hits[w]]
        if not matched:
            continue
        start = min(m[1][1] for m in matched)
        end = max(m[1][2] for m in matched)
        chars = sum(m[1][2] - m[1][1] for m in matched)
        coverage = chars / max(1, len(line.text))
        score = sum(weights[w] * m[0] for w, m in matched) + 0.1 * min(1.0, coverage)
        box = line.span_box(start, end)
        out.append(Candidate(_center(box), round(score, 4), "ocr", line.raw,
                             " ".join(w for w, _ in matched), box))
    return out, weights


# -- grounding ---------------------------------------------------------------------------------
def _pick(cands: list[Candidate], ordinal: int | None) -> Candidate:
    """The best candidate; among near-ties an ordinal ("the first ...") picks in reading order."""
    if ordinal is not None:
        best = max(c.score for c in cands)
        ties = sorted((c for c in cands if c.score >= best - TIE), key=lambda c: c.order)
        if -len(ties) <= ordinal < len(ties):
            return ties[ordinal]
    return min(cands, key=lambda c: (-c.score, c.order))


def _summary(cands: list[Candidate], n: int = 3) -> list[dict]:
    seen, out = set(), []
    for c in sorted(cands, key=lambda c: -c.score):
        if (c.source, c.matched, c.point) not in seen and len(out) < n:
            seen.add((c.source, c.matched, c.point))
            out.append({"matched": c.matched, "source": c.source, "score": c.score, "point": list(c.point)})
    return out


def ground(intent: Intent, boxes: Sequence[TextBox], find_icon: Callable[[Icon], tuple] | None = None,
           library: IconLibrary | None = None, icon_threshold: float = ICON_THRESHOLD) -> Decision:
    """The point for an intent on one screen's OCR boxes (and icons, when `library` and
    `find_icon` are given). Pure apart from `find_icon`: the unit tests call it directly."""
    if intent.action == "type":
        return Decision("type", None, intent.text, "focus", query=intent.text, tier="type")
    icons_named = (lambda words: library.named(words)) if library is not None and find_icon else (lambda words: [])
    tried: list[Candidate] = []
    # 1. quoted labels (and labels implied by "confirm") as text
    labels = intent.labels or intent.implicit
    cands = [c for label in labels for c in match_label(label, boxes)]
    if cands:
        c = _pick(cands, intent.ordinal)
        return Decision(intent.action, c.point, None, "ocr", c.matched, c.score, c.query, "label",
                        _summary(cands))
    # 2. quoted labels as icons
    icon_cands = []
    for label in labels:
        for icon, _name in icons_named(_words(label)):
            score, box = find_icon(icon)
            cand = Candidate(_center(box), round(score, 4), "icon", icon.name, label, box)
            tried.append(cand)
            if score >= icon_threshold:
                icon_cands.append(cand)
    if icon_cands:
        c = max(icon_cands, key=lambda c: c.score)
        return Decision(intent.action, c.point, None, "icon", c.matched, c.score, c.query, "label-icon",
                        _summary(icon_cands))
    # 3. content words: text boxes and named icons compete
    cands, weights = match_words(intent.words, boxes)
    for icon, name in icons_named(intent.words):
        score, box = find_icon(icon)
        w = sum(weights.get(n, 1.0) for n in name)
        cand = Candidate(_center(box), round(w * score, 4), "icon", icon.name, " ".join(name), box)
        tried.append(cand)
        if score >= icon_threshold:
            cands.append(cand)
    cands = [c for c in cands if c.score >= CONTENT_THRESHOLD]
    if cands:
        c = _pick(cands, intent.ordinal)
        return Decision(intent.action, c.point, None, c.source, c.matched, c.score, c.query, "words",
                        _summary(cands))
    return Decision(intent.action, None, None, "none", query=" ".join(labels or intent.words),
                    candidates=_summary(tried))


