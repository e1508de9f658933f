"""`clinigym report`: real recorded runs (the static keyframe environment on MedSPOT's
Orthanc and DICOMscope tasks, with placeholder keyframes) reported, and the page opened
in a real headless Chromium (Debian's, driven by Playwright): it renders, every image
loads, nothing is fetched from anywhere but the report folder, no console error."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from PIL import Image

from clinigym.runtime.browser import chromium_binary

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
# Set to a path (e.g. docs/report.png) to keep the screenshot the test takes of the page.
SCREENSHOT_ENV = "CLINIGYM_REPORT_SCREENSHOT"


def render(page_path: Path, tmp_path: Path, text_of: str) -> dict:
    """The report page in a real headless Chromium: the text of `text_of`, its images, charts,
    console messages, errors and requests; a screenshot."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    if not Path(chromium_binary()).exists():
        pytest.skip("Debian's chromium is not installed")
    html = page_path.read_text()
    assert not re.search(r"https?://|<script|<link[^>]+stylesheet", html)
    out = {"console": [], "errors": [], "requests": []}
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_binary(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: out["console"].append((m.type, m.text)))
            page.on("pageerror", lambda e: out["errors"].append(str(e)))
            page.on("requestfailed", lambda r: out["errors"].append(f"failed: {r.url}"))
            page.on("request", lambda r: out["requests"].append(r.url))
            page.goto(page_path.as_uri(), wait_until="load")
            out["text"] = page.inner_text(text_of)
            out["images"] = page.evaluate("""Array.from(document.images).map(i =>
                ({src: i.getAttribute('src'), complete: i.complete, w: i.naturalWidth}))""")
            out["charts"] = page.evaluate("Array.from(document.querySelectorAll('svg.chart')).map(s => "
                                          "[s.getBoundingClientRect().width, s.querySelectorAll('rect').length])")
            out["shot"] = Path(os.environ.get(SCREENSHOT_ENV) or tmp_path / "report.png")
            out["shot"].parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out["shot"]), full_page=bool(os.environ.get(SCREENSHOT_ENV)))
        finally:
            browser.close()
    assert not out["errors"]
    assert not [m for m in out["console"] if m[0] in ("error", "warning")], out["console"]
    assert all(u.startswith((page_path.parent.as_uri(), "data:")) for u in out["requests"]), out["requests"]
    assert all(i["complete"] and i["w"] > 0 for i in out["images"]), [i for i in out["images"] if not i["w"]]
    return out


def test_report_renders_in_chromium(built, tmp_path):
    page_path, data = built
    seen = render(page_path, tmp_path, "table.metrics")
    for run in data["runs"]:
        assert run["label"] in seen["text"]
        assert f"{100 * run['summary']['tca']:.1f}%" in seen["text"]
    expected = sum(1 + bool(e.get("zoom")) for r in data["runs"] for e in r["gallery"])
    assert len(seen["images"]) == expected
    assert len(seen["charts"]) == 3 and all(w > 100 and n >= 2 for w, n in seen["charts"]), seen["charts"]
    with Image.open(seen["shot"]) as img:
        assert img.width == 1400 and len(img.convert("L").getcolors(1 << 16) or ()) > 50
