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


def test_report_renders_in_chromium(built, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    if not Path(chromium_binary()).exists():
        pytest.skip("Debian's chromium is not installed")
    page_path, data = built
    html = page_path.read_text()
    assert not re.search(r"https?://|<script|<link[^>]+stylesheet", html)
    console, errors, requests = [], [], []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_binary(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: console.append((m.type, m.text)))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("requestfailed", lambda r: errors.append(f"failed: {r.url}"))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_path.as_uri(), wait_until="load")
            metrics = page.inner_text("table.metrics")
            images = page.evaluate("""Array.from(document.images).map(i =>
                ({src: i.getAttribute('src'), complete: i.complete, w: i.naturalWidth}))""")
            charts = page.evaluate("Array.from(document.querySelectorAll('svg.chart')).map(s => "
                                   "[s.getBoundingClientRect().width, s.querySelectorAll('rect').length])")
            shot = Path(os.environ.get(SCREENSHOT_ENV) or tmp_path / "report.png")
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=bool(os.environ.get(SCREENSHOT_ENV)))
        finally:
            browser.close()
    assert not errors
    assert not [m for m in console if m[0] in ("error", "warning")], console
    assert all(u.startswith((page_path.parent.as_uri(), "data:")) for u in requests), requests
    for run in data["runs"]:
        assert run["label"] in metrics
        assert f"{100 * run['summary']['tca']:.1f}%" in metrics
    expected = sum(1 + bool(e.get("zoom")) for r in data["runs"] for e in r["gallery"])
    assert len(images) == expected and all(i["complete"] and i["w"] > 0 for i in images), \
        [i for i in images if not i["w"]]
    assert len(charts) == 3 and all(w > 100 and n >= 2 for w, n in charts), charts
    with Image.open(shot) as img:
        assert img.width == 1400 and len(img.convert("L").getcolors(1 << 16) or ()) > 50


