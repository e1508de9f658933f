"""The documentation's code blocks, live tier: each page with a live block (python or console
without a marker: it drives a real program) runs, all its python and console blocks in order in
one working folder, as a reader would follow it (tests/docblocks.py has the convention)."""
from __future__ import annotations

import pytest

import docblocks
from docblocks import PageRun, read

PAGES = [page for page in docblocks.pages() if any(b.live for b in read(page)[0])]
BLOCK_TIMEOUT = 600      # seconds for one block; the page's whole run has PAGE_TIMEOUT
PAGE_TIMEOUT = 1200


def test_some_page_has_live_blocks():
    assert PAGES


@pytest.mark.timeout(PAGE_TIMEOUT)
@pytest.mark.parametrize("page", PAGES)
def test_page_blocks(page, tmp_path):
    blocks = [b for b in read(page)[0] if b.runs]
    run = PageRun(blocks, tmp_path, timeout=BLOCK_TIMEOUT)
    try:
        failed = [o.message for o in map(run.test, blocks) if not o.ok]
    finally:
        run.close()
    assert failed == [], "\n\n".join(failed)
