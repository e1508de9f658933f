"""Proposed target boxes for the element under a point, from the best source at hand.

Boxes are screen pixels `[x1, y1, x2, y2]` (inclusive edges, as `clinigym.core.judge.Box`).

Sources, best first:

- `dom`: Chromium-hosted programs: `document.elementFromPoint`, then the nearest
  meaningful clickable ancestor (a link, a button, a form control, an element
  with a role or a click handler), its box on the screen, and a CSS selector
  (+ text) that resolves to exactly that element when one exists.
- `element`: programs with an accessibility tree: the interactive element the program
  itself says is under the point, its box, and an `element` target that names it alone
  (`clinigym.core.naming.name_point`).
- `hover`: the element's own rollover feedback: what changed when the pointer
  moved onto the point (a toolbar button's border), the changed part that
  contains the point.
- `press`: what changed while the button was held down (a pressed button, a row
  selected on press), snapped outwards to the element's border lines.
- `changed`: after the action settled: the changed pixels around the point that
  now have the colour found at the point (a selection highlight), as one region.
- `region`: the changed region (pre-action vs settled post-action) containing the point.
- `ocr`: the OCR text box (RapidOCR, the OCR agent's engine) under the point,
  or the nearest one within a few pixels.
- `point`: nothing better: a small square around the point.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import cv2
import numpy as np

from clinigym.collect.boxes import area_fraction, contains

MAX_AREA_FRACTION = 0.25     # a "target" that covers more of the screen is not an element
POINT_BOX = 16               # half side of the fallback square
OCR_NEAR = 12                # px: an OCR box this close to the point still counts
CONTAIN_MARGIN = 2           # px: a region "contains" the point with this slack
SNAP_MAX = 4                 # px: border lines looked for outside a pressed region
SEED_TOLERANCE = 10          # colour distance (max over channels) of "the same colour"


@dataclass
class Proposal:
    source: str                      # dom, element, hover, press, changed, region, ocr, point
    box: list[float]
    selector: str | None = None      # dom: a CSS selector that resolves to the element
    text: str | None = None          # dom: with selector, the element's text contains this
    label: str | None = None         # the element's visible text or name (for instructions)
    element: dict | None = None      # element: the scenario target naming it in the program's tree
    detail: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v not in (None, {}, [])}


def point_box(point: Sequence[float], width: int, height: int) -> list[float]:
    x, y = point
    return [max(0.0, x - POINT_BOX), max(0.0, y - POINT_BOX),
            min(width - 1.0, x + POINT_BOX), min(height - 1.0, y + POINT_BOX)]


# -- pixel regions ------------------------------------------------------------------------
def diff_mask(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pixels that differ between two RGB (or BGRA) images of one size."""
    return np.any(a != b, axis=-1)


def regions(mask: np.ndarray, join: int = 1) -> list[list[int]]:
    """Bounding boxes of the connected parts of a mask; parts `join` px apart are one."""
    if not mask.any():
        return []
    m = mask.astype(np.uint8)
    if join:
        m = cv2.dilate(m, np.ones((2 * join + 1, 2 * join + 1), np.uint8))
    n, _, stats, _ = cv2.connectedComponentsWithStats(m, connectivity=8)
    h, w = mask.shape
    out = []
    for i in range(1, n):
        x, y, bw, bh, _ = (int(v) for v in stats[i])
        # undo the dilation (not past the image edge)
        x1, y1 = min(x + join, w - 1), min(y + join, h - 1)
        x2, y2 = max(x + bw - 1 - join, x1), max(y + bh - 1 - join, y1)
        out.append([x1, y1, x2, y2])
    return out


def _plausible(box: Sequence[float], width: int, height: int, min_side: int = 4) -> bool:
    return (box[2] - box[0] >= min_side and box[3] - box[1] >= min_side
            and area_fraction(box, width, height) <= MAX_AREA_FRACTION)


def region_at(mask: np.ndarray, point: Sequence[float], margin: float = CONTAIN_MARGIN) -> list[int] | None:
    """The smallest plausible changed region that contains the point."""
    h, w = mask.shape
    found = [b for b in regions(mask) if contains(b, point, margin) and _plausible(b, w, h)]
    return min(found, key=lambda b: (b[2] - b[0]) * (b[3] - b[1])) if found else None


def snap_to_border(rgb: np.ndarray, box: Sequence[int], max_px: int = SNAP_MAX) -> list[int]:
    """Grow a region (a pressed button's fill) over the border lines around it: on each
    side, lines that differ (nearly everywhere) from the background just outside them and
    end near the region's corners. A line running on past both corners is a neighbour's
    edge (a title bar, a toolbar's rim), not the element's own border."""
    h, w = rgb.shape[:2]
    x1, y1, x2, y2 = (int(v) for v in box)
    img = rgb.astype(np.int16)
    past = max_px + 1

    def line(side: str, k: int) -> tuple[np.ndarray, list[tuple[int, int]]] | None:
        """The k-th line outside `side`, and the points `past` px beyond its two ends."""
        if side in ("left", "right"):
            x = x1 - k if side == "left" else x2 + k
            return (img[y1:y2 + 1, x], [(y1 - past, x), (y2 + past, x)]) if 0 <= x < w else None
        y = y1 - k if side == "top" else y2 + k
        return (img[y, x1:x2 + 1], [(y, x1 - past), (y, x2 + past)]) if 0 <= y < h else None

    def runs_on(cur: np.ndarray, ends: list[tuple[int, int]]) -> bool:
        colour = np.median(cur, axis=0)
        return all(0 <= y < h and 0 <= x < w and np.abs(img[y, x] - colour).max() <= 24 for y, x in ends)

    grown = {}
    for side in ("left", "right", "top", "bottom"):
        outside = line(side, past)
        n = 0
        if outside is not None:
            for k in range(1, max_px + 1):
                cur = line(side, k)
                if cur is None:
                    break
                differs = np.abs(cur[0] - outside[0]).max(axis=-1) > 24
                if differs.mean() < 0.8 or runs_on(*cur):
                    break
                n = k
        grown[side] = n
    return [x1 - grown["left"], y1 - grown["top"], x2 + grown["right"], y2 + grown["bottom"]]


def feedback_box(before: np.ndarray, after: np.ndarray, point: Sequence[float],
                 snap_frame: np.ndarray | None = None) -> list[int] | None:
    """The element's own feedback (rollover, pressed look): the changed region containing
    the point; snapped to its border lines on `snap_frame` when given."""
    box = region_at(diff_mask(before, after), point)
    if box is None:
        return None
    if snap_frame is not None:
        box = snap_to_border(snap_frame, box)
    return box


def highlight_box(before: np.ndarray, after: np.ndarray, point: Sequence[float],
                  radius: int = 6) -> list[int] | None:
    """A selection highlight: the changed pixels that now have the colour most common
    among the changed pixels near the point, as one region around the point."""
    h, w = after.shape[:2]
    mask = diff_mask(before, after)
    px, py = int(round(point[0])), int(round(point[1]))
    y0, y1, x0, x1 = max(0, py - radius), min(h, py + radius + 1), max(0, px - radius), min(w, px + radius + 1)
    near = mask[y0:y1, x0:x1]
    if near.sum() < 4:
        return None
    colours = after[y0:y1, x0:x1][near][:, :3]
    values, counts = np.unique(colours, axis=0, return_counts=True)
    seed = values[int(np.argmax(counts))].astype(np.int16)
    same = np.abs(after[:, :, :3].astype(np.int16) - seed).max(axis=-1) <= SEED_TOLERANCE
    return region_at(mask & same, point, margin=radius)


def changed_regions(before: np.ndarray, after: np.ndarray, join: int = 1) -> list[list[int]]:
    """Changed regions, largest first."""
    found = regions(diff_mask(before, after), join)
    return sorted(found, key=lambda b: -(b[2] - b[0] + 1) * (b[3] - b[1] + 1))


# -- OCR -----------------------------------------------------------------------------------
def ocr_box(boxes, point: Sequence[float], near: float = OCR_NEAR):
    """The OCR text box under the point, else the nearest within `near` px: (box, text) or None."""
    best, best_d = None, None
    for b in boxes:
        x1, y1, x2, y2 = b.box
        dx = max(x1 - point[0], 0, point[0] - x2)
        dy = max(y1 - point[1], 0, point[1] - y2)
        d = (dx * dx + dy * dy) ** 0.5
        if d <= near and (best_d is None or d < best_d or (d == best_d and
                                                            _area(b.box) < _area(best.box))):
            best, best_d = b, d
    if best is None:
        return None
    return [round(v, 1) for v in best.box], best.text


def _area(box) -> float:
    return (box[2] - box[0]) * (box[3] - box[1])


# -- DOM -----------------------------------------------------------------------------------
_DOM_COMMON = r"""
  const d = window.devicePixelRatio;
  const ox = window.screenX + (window.outerWidth - window.innerWidth) / 2;
  const oy = window.screenY + (window.outerHeight - window.innerHeight);
  const visible = e => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'; };
  const screenBox = e => { const r = e.getBoundingClientRect();
    return [(ox + r.left) * d, (oy + r.top) * d, (ox + r.right) * d, (oy + r.bottom) * d]; };
  // Ids a page generates per load (counters, UUIDs) are not stable names.
  const stableId = id => !!id && !/\d{3,}|^ui-id-|[0-9a-f]{8}-[0-9a-f]{4}|^\d/i.test(id);
  const stateClass = c => /hover|focus|active|down|pressed|selected|disabled|ui-btn-up|ui-btn-down|corner|shadow/i.test(c);
  const esc = s => CSS.escape(s);
  const firstLine = e => {
    const t = (e.innerText || e.value || '').split('\n').map(s => s.trim()).filter(s => s);
    return t.length ? t[0].slice(0, 80) : '';
  };
  const matches = (sel, text) => {
    let els;
    try { els = Array.from(document.querySelectorAll(sel)); } catch (err) { return []; }
    return els.filter(visible).filter(e => text === null || (e.innerText || e.value || '').trim().includes(text));
  };
  // The selector of an element: its id, or its tag under the id'd ancestors up to a page.
  const scopedSelector = el => {
    const parts = [stableId(el.id) ? '#' + esc(el.id) : el.tagName.toLowerCase()];
    for (let e = el.parentElement; e && e !== document.body && e !== document.documentElement; e = e.parentElement) {
      if (stableId(e.id)) {
        let p = '#' + esc(e.id);
        for (const c of e.classList) if (/active/i.test(c)) p += '.' + esc(c);
        parts.unshift(p);
        if (e.matches('[data-role=page], [data-role=dialog], [role=dialog], main, dialog')) break;
      }
      if (stableId(el.id) && parts.length >= 2) break;
    }
    return parts.join(' ');
  };
  const classScope = el => {
    for (let e = el.parentElement; e && e !== document.body; e = e.parentElement) {
      const c = Array.from(e.classList).find(c => !stateClass(c) && !/^ui-(btn|li|link|body|bar|shadow)/.test(c));
      if (c) return '.' + esc(c);
    }
    return null;
  };
  // A selector (+ text) that resolves to exactly this element among the visible ones.
  const describe = el => {
    const text = firstLine(el) || null;
    const sel = scopedSelector(el);
    const tries = [[sel, null], [sel, text]];
    const scope = classScope(el);
    if (scope) tries.push([scope + ' ' + sel, null], [scope + ' ' + sel, text]);
    for (const [s, t] of tries) {
      const m = matches(s, t);
      if (m.length === 1 && m[0] === el) return {selector: s, text: t};
    }
    return {selector: null, text: null};
  };
  const label = el => (firstLine(el) || el.getAttribute('aria-label') || el.getAttribute('title')
                       || el.getAttribute('alt') || el.getAttribute('placeholder') || '').trim();
"""

_DOM_AT = "((sx, sy, preferFocus) => {" + _DOM_COMMON + r"""
  const cx = sx / d - ox, cy = sy / d - oy;
  const CLICKABLE = 'a[href], a[id], button, input, select, textarea, label, summary, [role=button], ' +
    '[role=link], [role=menuitem], [role=tab], [role=option], [role=checkbox], [role=radio], ' +
    '[role=switch], [onclick], [tabindex]:not([tabindex="-1"])';
  let hit = document.elementFromPoint(cx, cy);
  if (!hit) return null;
  let el = null;
  const act = document.activeElement;
  if (preferFocus && act && act !== document.body && act.matches('input, textarea, select, [contenteditable]')) el = act;
  if (!el) el = hit.closest(CLICKABLE);
  if (!el) {
    el = hit;   // no clickable ancestor: climb out of inline wrappers (text spans, icons)
    while (el.parentElement && el.parentElement !== document.body &&
           /^(SPAN|B|I|EM|STRONG|SMALL|FONT|IMG|SVG|PATH|USE|ABBR|SUP|SUB)$/i.test(el.tagName)) el = el.parentElement;
  }
  const box = screenBox(el);
  const vw = window.innerWidth * d, vh = window.innerHeight * d;
  const big = (box[2] - box[0]) * (box[3] - box[1]) > 0.25 * vw * vh;
  const desc = describe(el);
  return {box, big, selector: desc.selector, text: desc.text, label: label(el),
          tag: el.tagName.toLowerCase(), hit: hit.tagName.toLowerCase(),
          clickable: !!hit.closest(CLICKABLE)};
})(%s, %s, %s)"""

# Landmarks: visible elements with a stable selector (id'd elements, and dialogs/popups by
# class), to tell what appeared or went away with an action.
_LANDMARKS = "(() => {" + _DOM_COMMON + r"""
  const out = {};
  for (const e of document.querySelectorAll('[id]')) {
    if (!stableId(e.id) || !visible(e)) continue;
    const s = scopedSelector(e);
    if (!(s in out)) out[s] = screenBox(e);
  }
  for (const e of document.querySelectorAll('[class]')) {
    const c = Array.from(e.classList).find(c => /(dialog|popup|modal|overlay)(-container)?$/i.test(c) && !stateClass(c));
    if (!c || !visible(e)) continue;
    const s = '.' + esc(c);
    if (!(s in out)) out[s] = screenBox(e);
  }
  return out;
})()"""


def dom_at(devtools, point: Sequence[float], prefer_focus: bool = False) -> Proposal | None:
    """The DOM proposal for the element under a screen point, or None (no page, no element,
    or an element as big as the page)."""
    value = devtools.evaluate(_DOM_AT % (json.dumps(float(point[0])), json.dumps(float(point[1])),
                                         json.dumps(bool(prefer_focus))))
    if not value or value.get("big"):
        return None
    return Proposal("dom", [round(v, 2) for v in value["box"]], value.get("selector"), value.get("text"),
                    value.get("label") or None,
                    {"tag": value.get("tag"), "hit": value.get("hit"), "clickable": value.get("clickable")})


def dom_landmarks(devtools) -> dict[str, list[float]]:
    return devtools.evaluate(_LANDMARKS) or {}


# -- choosing --------------------------------------------------------------------------------
ORDER = {
    "click": ("dom", "element", "hover", "press", "changed", "ocr", "region", "point"),
    "double_click": ("dom", "element", "hover", "changed", "ocr", "region", "point"),
    "right_click": ("dom", "element", "hover", "ocr", "changed", "region", "point"),
    "drag": ("dom", "element", "hover", "ocr", "point"),
    "type": ("dom", "element", "changed", "ocr", "region", "point"),
    "hover": ("dom", "element", "hover", "ocr", "point"),
    "scroll": ("dom", "element", "ocr", "point"),
}


def best(candidates: list[Proposal], action: str) -> Proposal | None:
    order = ORDER.get(action, ORDER["click"])
    ranked = sorted((c for c in candidates if c.source in order), key=lambda c: order.index(c.source))
    return ranked[0] if ranked else None
