"""The report's gallery: every recorded step's observation with its target box and the
predicted point, in the colour of the step's outcome."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PIL import Image, ImageDraw

from clinigym.core.recording_schema import StepRecord
from clinigym.eval.report.charts import escape
from clinigym.eval.report.runs import (
    JPEG_QUALITY,
    OUTCOME_COLOURS,
    THUMB_WIDTH,
    ZOOM_BELOW,
    ZOOM_MAX,
    Run,
    action_text,
    outcome_of,
)


# -- gallery -------------------------------------------------------------------------------
def _overlay(img: Image.Image, rec: StepRecord, s: float, ox: float = 0.0, oy: float = 0.0) -> None:
    """Draws the step's target (and end) box and its predicted point onto `img`, an image of the
    observation region from (ox, oy) scaled by s, in the colour of the step's outcome."""
    colour = OUTCOME_COLOURS[outcome_of(rec)]
    draw = ImageDraw.Draw(img)
    for box, line in ((rec.end_box, 1), (rec.target_box, 2)):
        if box and len(box) == 4:
            x1, y1, x2, y2 = (box[0] - ox) * s, (box[1] - oy) * s, (box[2] - ox) * s, (box[3] - oy) * s
            cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
            x1, x2 = min(x1, cx - 3), max(x2, cx + 3)    # at least 6 px, so a tiny target stays visible
            y1, y2 = min(y1, cy - 3), max(y2, cy + 3)
            draw.rectangle([x1 - 1, y1 - 1, x2 + 1, y2 + 1], outline="white", width=line + 2)
            draw.rectangle([x1, y1, x2, y2], outline=colour, width=line)
    action = rec.action or {}
    point, end = action.get("point"), action.get("end_point")
    if point is None:
        return
    px, py = (point[0] - ox) * s, (point[1] - oy) * s
    if end is not None:
        ex, ey = (end[0] - ox) * s, (end[1] - oy) * s
        draw.line([px, py, ex, ey], fill="white", width=4)
        draw.line([px, py, ex, ey], fill=colour, width=2)
        draw.ellipse([ex - 3, ey - 3, ex + 3, ey + 3], fill=colour, outline="white")
    r = 7
    draw.ellipse([px - r - 1, py - r - 1, px + r + 1, py + r + 1], outline="white", width=4)
    draw.ellipse([px - r, py - r, px + r, py + r], outline=colour, width=2)
    for dx, dy in ((1, 0), (0, 1)):
        draw.line([px - dx * (r + 5), py - dy * (r + 5), px - dx * (r - 3), py - dy * (r - 3)], fill=colour, width=2)
        draw.line([px + dx * (r - 3), py + dy * (r - 3), px + dx * (r + 5), py + dy * (r + 5)], fill=colour, width=2)
    draw.ellipse([px - 1.5, py - 1.5, px + 1.5, py + 1.5], fill=colour)


def zoom_region(rec: StepRecord, w: int, h: int, strip_w: int) -> tuple[float, float, float, float] | None:
    """A 3:1 region of the observation around a small target (and the predicted point, when it is
    near), at most ZOOM_MAX times magnified in a strip `strip_w` wide; None without a target."""
    box = rec.target_box
    if not box or len(box) != 4:
        return None
    x1, y1, x2, y2 = box
    point = (rec.action or {}).get("point")
    if point is not None:
        ux1, uy1, ux2, uy2 = min(x1, point[0]), min(y1, point[1]), max(x2, point[0]), max(y2, point[1])
        if ux2 - ux1 <= w / 4 and uy2 - uy1 <= h / 4:
            x1, y1, x2, y2 = ux1, uy1, ux2, uy2
    pad = 30
    rw = max(x2 - x1 + 2 * pad, 3 * (y2 - y1 + 2 * pad), strip_w / ZOOM_MAX)
    rw = min(rw, w, 3 * h)
    rh = rw / 3
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    rx = min(max(cx - rw / 2, 0), w - rw)
    ry = min(max(cy - rh / 2, 0), h - rh)
    return rx, ry, rx + rw, ry + rh


def draw_step(src: Path, dst: Path, rec: StepRecord, width: int = THUMB_WIDTH,
              zoom_dst: Path | None = None) -> tuple[tuple[int, int], tuple[int, int] | None]:
    """The step's observation, downscaled to at most `width`, with its target box and predicted
    point drawn; and, when the target is small on it, a zoomed strip around the target into
    `zoom_dst`. Returns the sizes of both (the second None without a strip)."""
    with Image.open(src) as img:
        full = img.convert("RGB")
    w, h = full.size
    s = min(1.0, width / w)
    thumb = full.resize((max(1, round(w * s)), max(1, round(h * s))), Image.LANCZOS, reducing_gap=2.0) \
        if s < 1.0 else full.copy()
    _overlay(thumb, rec, s)
    dst.parent.mkdir(parents=True, exist_ok=True)
    thumb.save(dst, "JPEG", quality=JPEG_QUALITY, optimize=True)
    zoom_size = None
    box = rec.target_box
    if zoom_dst is not None and s < 1.0 and box and max(box[2] - box[0], box[3] - box[1]) * s < ZOOM_BELOW:
        region = zoom_region(rec, w, h, thumb.width)
        if region is not None:
            x1, y1, x2, y2 = (round(v) for v in region)
            z = thumb.width / (x2 - x1)
            strip = full.crop((x1, y1, x2, y2)).resize((thumb.width, max(1, round((y2 - y1) * z))), Image.LANCZOS)
            _overlay(strip, rec, z, x1, y1)
            strip.save(zoom_dst, "JPEG", quality=JPEG_QUALITY, optimize=True)
            zoom_size = strip.size
    return thumb.size, zoom_size


def build_gallery(run: Run, index: int, out: Path, limit: int, width: int) -> None:
    """Draws up to `limit` steps of the run into out/images (in parallel: decoding the PNG
    observations is most of the time); fills run.gallery with their records."""
    jobs = []
    for ei, ep in enumerate(run.episodes):
        for si, rec in enumerate(ep.steps):
            if len(run.gallery) >= limit:
                break
            entry = {"episode": ep.folder.name, "scenario": ep.header.scenario,
                     "app": ep.header.app, "n_steps": ep.header.n_steps,
                     "step": rec.step, "t": rec.t, "instruction": rec.instruction,
                     "action": rec.action, "correct": bool(rec.correct),
                     "failure": rec.failure, "outcome": outcome_of(rec),
                     "target_box": rec.target_box, "end_box": rec.end_box,
                     "transition_seen": rec.transition_seen, "image": None, "image_size": None}
            run.gallery.append(entry)
            src = ep.folder / rec.before if rec.before else None
            if src is not None and src.exists():
                jobs.append((entry, src, f"images/r{index}-e{ei:04d}-s{si:03d}", rec))

    def draw(job):
        entry, src, name, rec = job
        try:
            size, zoom = draw_step(src, out / f"{name}.jpg", rec, width, out / f"{name}-zoom.jpg")
            entry.update(image=f"{name}.jpg", image_size=list(size))
            if zoom:
                entry.update(zoom=f"{name}-zoom.jpg", zoom_size=list(zoom))
        except OSError as exc:  # an unreadable PNG (a run killed mid-write): shown as missing
            entry["image_error"] = str(exc)

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        list(pool.map(draw, jobs))


def _card(entry: dict) -> str:
    outcome = entry["outcome"]
    badge = "correct" if outcome == "correct" else (entry["failure"] or outcome.replace("_", " "))
    step = entry["step"]
    where = f"step {step + 1}/{entry['n_steps']}" if isinstance(step, int) and entry.get("n_steps") else ""
    if entry["image"]:
        w, h = entry["image_size"]
        img = (f'<img src="{escape(entry["image"])}" width="{w}" height="{h}" '
               f'alt="{escape(entry["scenario"])} {where}: {escape(badge)}">')
        if entry.get("zoom"):
            zw, zh = entry["zoom_size"]
            img += (f'<img class="zoom" src="{escape(entry["zoom"])}" width="{zw}" height="{zh}" '
                    f'alt="the target, magnified" title="the target, magnified">')
    else:
        img = '<div class="noimg">observation not recorded</div>'
    instruction = entry["instruction"] or ""
    extra = []
    if entry.get("transition_seen") is False and entry["correct"] is False and entry["failure"] == "no_transition":
        extra.append("expected transition not seen")
    return (f'<figure class="card {outcome}">{img}<figcaption>'
            f'<span class="badge {outcome}">{escape(badge)}</span> '
            f'<b>{escape(entry["scenario"])}</b> <span class="muted">{escape(where)}</span>'
            f'<div class="instr" title="{escape(instruction)}">{escape(instruction)}</div>'
            f'<code>{escape(action_text(entry["action"]))}</code>'
            + "".join(f' <span class="muted">{escape(x)}</span>' for x in extra)
            + f'<div class="muted small">{escape(entry["episode"])}</div></figcaption></figure>')


def gallery_html(run: Run, index: int, limit: int) -> str:
    total = run.n_steps_recorded
    shown = len(run.gallery)
    counts = {k: sum(e["outcome"] == k for e in run.gallery) for k in OUTCOME_COLOURS}
    note = f"{shown} recorded steps" if shown == total else \
        f"the first {shown} of {total} recorded steps (at most {limit} per run; see --gallery-limit)"
    cid = f"only-errors-{index}"
    return (f'<details class="gallery" open><summary><span class="sw" style="background:{run.colour}"></span>'
            f'{escape(run.label)} — {escape(note)}: '
            + ", ".join(f'<span class="badge {k}">{v} {k.replace("_", " ")}</span>' for k, v in counts.items() if v)
            + f'</summary><input type="checkbox" id="{cid}" class="filter"><label for="{cid}">only the steps '
              f'that were not correct</label><div class="grid">'
            + "".join(_card(e) for e in run.gallery) + "</div></details>")


