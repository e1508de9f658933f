"""Reading an instruction (quoted labels, the kind of action, content words, ordinals) and
comparing texts as OCR reads them. Pure: no OCR, no images."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from rapidfuzz.distance import Levenshtein

from clinigym.agents.intent import QUOTE, TYPE_VERB, pointer_action

_lev_similarity = Levenshtein.normalized_similarity

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


@dataclass(frozen=True)
class TextBox:
    """One OCR result: text and its axis-aligned box (x1, y1, x2, y2) in image pixels."""
    text: str
    box: tuple[float, float, float, float]
    score: float = 1.0


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


