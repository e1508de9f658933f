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
crops to a scaled observation). The environment is used for one thing only:
the program's name, to find its icon crops (pass `icons=` to avoid even that).

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
import math
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from clinigym.actions import Action
from clinigym.agents.intent import QUOTE, TYPE_VERB, pointer_action

from rapidfuzz.distance import Levenshtein

_lev_similarity = Levenshtein.normalized_similarity

# -- thresholds ---------------------------------------------------------------------------
LABEL_THRESHOLD = 0.80      # quoted label vs text (after the partial-box penalty)
WORD_THRESHOLD = 0.80       # one content word vs one OCR token
ICON_THRESHOLD = 0.90       # normalised cross-correlation of an icon crop
ICON_THRESHOLD_SCALED = 0.85  # ... when the observation is scaled (the crop is resampled)
CONTENT_THRESHOLD = 0.35    # weighted content-word score of the best candidate
TIE = 0.02                  # candidates this close are ties (ordinals and reading order decide)
MIN_OCR_SCORE = 0.5         # OCR boxes recognised with less confidence are ignored

STOP_WORDS = frozenset("""
a an the this that these those it its to of in into onto at on from for with by and or then now
please is are be there here which who what
click clicks clicked clicking double right left single press pressing push tap hit
select selecting choose pick open opening go switch use using make set do show
button buttons icon icons menu menus widget widgets entry entries item items option options
tab tabs link links field fields box checkbox control toolbar tool bar list section panel pane
next previous below above under over beside near top bottom middle
""".split())
# Words that name a kind of thing, not a particular one: they count less.
GENERIC_WORDS = frozenset("""
image images study studies patient patients series instance instances file files name names
window windows view viewer data dicom current selected new colors color colour colours
value values level tools
""".split())
ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "last": -1}
CONFIRM_LABELS = ("OK", "Yes")
CONTAINER_NOUNS = ("menu", "section", "toolbar", "tool bar", "tools", "settings", "panel", "pane",
                   "area", "bar", "window", "dialog", "list", "sidebar", "viewer", "browser")

_PLACEHOLDER = re.compile(r"\x00(\d+)\x00")
_CONTEXT = re.compile(
    r"\b(?:from|in|within|inside|under)\s+the\s+(?:(?:\x00\d+\x00|[\w^\-]+)\s+){0,2}?"
    r"(?:" + "|".join(n.replace(" ", r"\s+") for n in CONTAINER_NOUNS) + r")\b", re.I)
_PURPOSE = re.compile(r"\s(?:in\s+order\s+to|so\s+that|to)\s+(?!the\b|a\b|an\b|\x00)[a-z]+", re.I)
_STRIP = "()[]{}<>,;:!?\"'`|*®©…"
# Characters OCR confuses on UI fonts (underlined mnemonics: File -> Eile, Open -> Qpen).
_CONFUSABLE = str.maketrans({"q": "o", "0": "o", "1": "l", "i": "l", "|": "l", "!": "l", "e": "f",
                             "5": "s", "8": "b"})


# -- data ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TextBox:
    """One OCR result: text and its axis-aligned box (x1, y1, x2, y2) in image pixels."""
    text: str
    box: tuple[float, float, float, float]
    score: float = 1.0


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
class Intent:
    """What the instruction asks for, read from its words alone."""
    action: str                                  # click, double_click, right_click, hover, type
    text: str | None = None                      # the text of a type action
    labels: list[str] = field(default_factory=list)      # quoted target labels
    context: list[str] = field(default_factory=list)     # quoted containers (not targets)
    implicit: list[str] = field(default_factory=list)    # labels implied ("confirm" -> OK, Yes)
    words: list[str] = field(default_factory=list)       # content words (lower case)
    ordinal: int | None = None


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


# -- text helpers ----------------------------------------------------------------------------
def normalize(text: str) -> str:
    """Lower case, one space between words, no spaces around - / ^ (OCR: 'Min - Max')."""
    text = text.replace("’", "'").replace("‘", "'").replace("×", "x")
    text = re.sub(r"\s*([-/^])\s*", r"\1", text.strip().lower())
    return re.sub(r"\s+", " ", text)


def tokens(text: str) -> list[tuple[str, int, int]]:
    """Normalised words of a normalised text with their character offsets."""
    out = []
    for m in re.finditer(r"\S+", text):
        word = m.group().strip(_STRIP + ".")
        if word:
            start = m.start() + m.group().find(word)
            out.append((word, start, start + len(word)))
    return out


def similarity(a: str, b: str) -> float:
    """Normalised Levenshtein similarity of two normalised strings; labels of one or two
    characters only match exactly; OCR-confusable characters cost little."""
    if a == b:
        return 1.0
    if min(len(a), len(b)) <= 2:
        return 0.0
    plain = _lev_similarity(a, b)
    ca, cb = a.translate(_CONFUSABLE), b.translate(_CONFUSABLE)
    canon = 1.0 if ca == cb else _lev_similarity(ca, cb)
    return max(plain, 0.95 * canon)


def stem(word: str) -> str:
    for suffix in ("ion", "ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def same_stem(a: str, b: str) -> bool:
    sa, sb = stem(a), stem(b)
    if sa == sb:
        return True
    short, long_ = sorted((sa, sb), key=len)
    return len(short) >= 4 and long_.startswith(short)


def _words(text: str) -> list[str]:
    return [w for w, _, _ in tokens(normalize(text))]


# -- instruction -----------------------------------------------------------------------------
def parse_instruction(instruction: str) -> Intent:
    quotes: list[str] = []

    def keep(m: re.Match) -> str:
        quotes.append(next(g for g in m.groups() if g is not None))
        return f" \x00{len(quotes) - 1}\x00 "

    text = re.sub(r"\s+", " ", QUOTE.sub(keep, instruction)).strip()
    action = pointer_action(text)
    verb = TYPE_VERB.search(text)
    if verb and quotes:
        after = [int(i) for i in _PLACEHOLDER.findall(text[verb.end():])]
        if after:
            typed = after[0]
            rest = [q for i, q in enumerate(quotes) if i != typed]
            return Intent("type", text=quotes[typed], labels=rest)
    # Purpose clauses name the effect, not the target: "Click OK to confirm ...".
    m = _PURPOSE.search(text)
    if m:
        head = text[: m.start()]
        if _PLACEHOLDER.search(head) or any(w not in STOP_WORDS for w in _words(head)):
            text = head
    # Containers: "from the 'Browser' menu", "in the processing tools".
    context: set[int] = set()
    for m in _CONTEXT.finditer(text):
        context.update(int(i) for i in _PLACEHOLDER.findall(m.group()))
    text = _CONTEXT.sub(" ", text)
    present = [int(i) for i in _PLACEHOLDER.findall(text)]
    labels = [quotes[i] for i in present if i not in context]
    implicit = list(CONFIRM_LABELS) if not labels and re.search(r"\bconfirm", instruction, re.I) else []
    words: list[str] = []
    ordinal = None
    for w in _words(_PLACEHOLDER.sub(lambda m: " " + quotes[int(m.group(1))] + " ", text)):
        if w in ORDINALS:
            ordinal = ORDINALS[w]
        elif w not in STOP_WORDS and w not in words and (len(w) > 1 or w.isdigit()):
            words.append(w)
    return Intent(action, None, labels, [quotes[i] for i in sorted(context)], implicit, words, ordinal)


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


# -- icons -----------------------------------------------------------------------------------
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


def icon_folders(app_name: str) -> list[Path]:
    from clinigym.apps import CONTAINERS
    return [CONTAINERS / app_name / "icons"]


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
        for icon, name in icons_named(_words(label)):
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

    `icons`: folders of icon crops (default: `containers/<app>/icons` of the env's program,
    or of `app`). `ocr`: a function RGB array -> list[TextBox] (default RapidOCR).
    """

    name = "ocr"

    def __init__(self, env=None, seed: int | None = None, icons: Iterable[str | Path] | None = None,
                 app: str | None = None, ocr: Callable[[np.ndarray], list[TextBox]] | None = None,
                 cache_size: int = 8):
        if icons is None:
            if app is None and env is not None:
                app = env.unwrapped.app.name     # the program's name only: to find its icon crops
            icons = icon_folders(app) if app else []
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
