"""The collection page of `clinigym collect`, driven in a real headless Chromium (Debian's,
through Playwright) like a person would: through the mouse and the keyboard."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from clinigym.collect.server import CollectServer
from clinigym.runtime.browser import chromium_binary

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
W, H = 1920, 1080
TIMEOUT = 90_000   # ms: an action, an undo (reset + replay) or the end (oracle replay, export)


@pytest.fixture(scope="module", name="browser")
def browser_fixture():
    """A headless Chromium for the page (import it into a test module to use `browser`)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    if not Path(chromium_binary()).exists():
        pytest.skip("Debian's chromium is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_binary(), args=CHROMIUM_ARGS)
        yield b
        b.close()


class Page:
    """The collection page, driven like a person would: through the mouse and the keyboard."""

    def __init__(self, browser, server: CollectServer):
        self.server = server
        # bypass_csp: Playwright evaluates its predicates as strings, which the page's CSP forbids
        self.page = browser.new_page(viewport={"width": 1600, "height": 900}, bypass_csp=True)
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(server.url)
        self.page.wait_for_function("window.collect.state !== null && (window.collect.mode === 'review' "
                                    "|| window.collect.liveLoaded === true)", timeout=TIMEOUT)

    def js(self, expr: str):
        return self.page.evaluate(expr)

    def at(self, x: float, y: float) -> tuple[float, float]:
        r = self.page.locator("#stage").bounding_box()
        return r["x"] + x * r["width"] / W, r["y"] + y * r["height"] / H

    def act(self, x: int, y: int, double: bool = False) -> dict:
        n = self.js("window.collect.state.steps.length")
        # the page ignores the screen while a step is open or a call is in flight
        assert self.js("canAct()"), self.js("document.getElementById('status').textContent")
        px, py = self.at(x + 0.2, y + 0.2)
        (self.page.mouse.dblclick if double else self.page.mouse.click)(px, py)
        self.page.wait_for_function(f"window.collect.state.steps.length === {n + 1} && window.collect.editing "
                                    f"&& window.collect.editing.index === {n} && !window.collect.inflight",
                                    timeout=TIMEOUT)
        return self.js(f"window.collect.state.steps[{n}]")

    def box(self) -> list[float]:
        return json.loads(self.page.get_attribute("#box", "data-box"))

    def drag_handle(self, handle: str, dx: float, dy: float) -> None:
        """Drag a corner/edge handle of the box by (dx, dy) screen pixels."""
        r = self.page.locator(f'#box .handle[data-h="{handle}"]').bounding_box()
        k = self.page.locator("#stage").bounding_box()["width"] / W
        x, y = r["x"] + r["width"] / 2, r["y"] + r["height"] / 2
        self.page.mouse.move(x, y)
        self.page.mouse.down()
        self.page.mouse.move(x + dx * k / 2, y + dy * k / 2, steps=3)
        self.page.mouse.move(x + dx * k, y + dy * k, steps=3)
        self.page.mouse.up()

    def accept(self, instruction: str) -> None:
        n = self.js("window.collect.editing.index")
        self.page.fill("#instruction", instruction)
        self.page.click("#accept")
        self.page.wait_for_function(f"window.collect.state.steps[{n}].accepted && window.collect.editing === null",
                                    timeout=TIMEOUT)

    def accept_refused(self, instruction: str) -> list[str]:
        """Accept with quality flags: nothing is saved, the flags are shown."""
        self.page.fill("#instruction", instruction)
        self.page.click("#accept")
        self.page.wait_for_selector("#force:not(.hidden)", timeout=TIMEOUT)
        return [li.get_attribute("data-flag") for li in self.page.query_selector_all("#flags li")]

    def end(self, overview: str, scenario_id: str, goal: str = "") -> dict:
        self.page.fill("#overview", overview)
        self.page.fill("#goal", goal)
        self.page.fill("#scenario-id", scenario_id)
        self.page.click("#end")
        self.page.wait_for_selector("#result[data-status]", timeout=TIMEOUT * 2)
        return self.server.session.results[-1]

    def close(self) -> None:
        self.page.close()


def api(server: CollectServer, path: str, body=None, token: str | None = None) -> requests.Response:
    http = requests.Session()
    http.trust_env = False
    url = f"http://127.0.0.1:{server.port}{path}"
    params = {"token": server.token if token is None else token}
    if body is None:
        return http.get(url, params=params, timeout=30)
    return http.post(url, params=params, data=body if isinstance(body, (str, bytes)) else json.dumps(body),
                     timeout=30)
