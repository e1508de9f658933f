"""The documentation site: built once (`mkdocs build --strict`, as `make docs`), served on loopback
and opened in Debian's Chromium (driven by Playwright): every page of the navigation renders
with its title and main heading, nothing it loads is missing or comes from outside, no console
error; the command line reference has a section for every command of the parser."""
from __future__ import annotations

import functools
import http.server
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import sync_playwright
from test_report_chromium import CHROMIUM_ARGS

from clinigym.cli.help_page import TITLE, commands
from clinigym.cli.main import build_parser
from clinigym.runtime.browser import chromium_binary
from conftest import REPO

CLI_PAGE = "reference/cli.md"


def nav_pages() -> list[tuple[str | None, str]]:
    """(title, page) of every entry of mkdocs.yml's navigation."""
    def walk(items):
        for item in items:
            if isinstance(item, str):       # no title in the nav: the page's own heading
                yield None, item
                continue
            for title, value in item.items():
                yield from walk(value) if isinstance(value, list) else [(title, value)]
    return list(walk(yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]))


def heading(page: str) -> str:
    """The page's main heading, from its Markdown (the generated CLI page: its title)."""
    if page == CLI_PAGE:
        return TITLE
    text = (REPO / "docs" / page).read_text()
    # a page may include a file of the repository (`--8<-- "CHANGELOG.md"`, pymdownx.snippets)
    text = re.sub(r'^--8<-- "(.+)"$', lambda m: (REPO / m.group(1)).read_text(), text, flags=re.M)
    found = re.search(r"^# (.+)$", text, re.M)
    assert found, f"docs/{page} has no '# ' heading"
    return found.group(1).strip()


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):      # every request on stderr is noise in the test's output
        pass


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The site built into a temporary folder, served on 127.0.0.1: its base URL."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "--site-dir", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    handler = functools.partial(Quiet, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


# This module's only: Playwright's sync API runs an event loop while it is open, and every
# later sync_playwright() in the session (the report tests) refuses to start inside it.
@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=chromium_binary(), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def visit(browser, url: str) -> dict:
    """A page opened in a fresh tab: its status, title, main heading, the problems seen."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
    page.on("request", lambda r: None if r.url.startswith(("http://127.0.0.1:", "data:", "blob:"))
            else problems.append(f"outside: {r.url}"))
    page.on("response", lambda r: problems.append(f"{r.status}: {r.url}") if r.status >= 400 else None)
    try:
        response = page.goto(url, wait_until="load")
        page.wait_for_load_state("networkidle")
        return {"status": response.status if response else None, "title": page.title(), "page": page,
                "h1": page.inner_text("article h1").strip().removesuffix("¶"), "problems": problems}
    except Exception:
        page.close()
        raise


@pytest.mark.parametrize("title,page", nav_pages(), ids=[p for _, p in nav_pages()])
def test_page_renders(site, browser, title, page):
    seen = visit(browser, site + page.removesuffix(".md") + ".html")
    try:
        assert seen["status"] == 200
        assert seen["title"] == ("clinigym" if page == "index.md" else f"{title or heading(page)} - clinigym")
        assert seen["h1"] == heading(page)
        assert seen["problems"] == []
    finally:
        seen["page"].close()


def test_cli_reference_has_every_command(site, browser):
    seen = visit(browser, site + CLI_PAGE.removesuffix(".md") + ".html")
    try:
        page = seen["page"]
        found = {}
        for words, sub, _ in commands(build_parser()):
            section = page.locator(f"[id='{'-'.join(words)}']")
            found[sub.prog] = section.count() == 1 and section.inner_text().strip().startswith(sub.prog)
        assert found and all(found.values()), [prog for prog, ok in found.items() if not ok]
        assert seen["problems"] == []
    finally:
        seen["page"].close()

