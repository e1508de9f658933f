"""The page's own account of its work (`settle.page_busy`, OHIF's clinigym-hooks.js) in a real
OHIF in a real Chromium: requests in flight, timers due soon and running animations make
it busy; and a step's screen is not settled while it is, so what a page timer draws
after the idle window belongs to the step."""
from __future__ import annotations

import time

import numpy as np
import pytest

from clinigym.runtime.waiting import wait_for

pytestmark = pytest.mark.live

# A full-window red layer, drawn by a page timer `delay` ms from now.
RED_LATER = """setTimeout(() => {
  const d = document.createElement('div'); d.id = 'clinigym-test-red';
  d.style.cssText = 'position:fixed;inset:0;background:#f00;z-index:99999';
  document.body.appendChild(d);
}, %d)"""


@pytest.fixture
def ohif(backends):
    backend = backends("ohif")
    backend.reset()
    yield backend
    backend.reset()    # the page the test changed is not what the next test starts from


def busy(backend, expression: str = "clinigymBusy(600)"):
    return backend.dom_client().evaluate(expression)


def test_the_page_tells_requests_timers_and_transitions(ohif):
    assert wait_for(lambda: busy(ohif) is False, 10, "the study list at rest") is True
    # A timer due within the horizon, and not within a shorter one; cleared, nothing.
    assert busy(ohif, "window.t = setTimeout(() => {}, 400); clinigymBusy(600)") is True
    assert busy(ohif, "clinigymBusy(100)") is False
    assert busy(ohif, "clearTimeout(window.t); clinigymBusy(600)") is False
    # A request in flight, until it has come back.
    assert busy(ohif, "fetch('/app-config.js'); clinigymBusy(0)") is True
    wait_for(lambda: busy(ohif, "clinigymBusy(0)") is False, 10, "the request to come back")
    # An animation while it runs (OHIF's CSS ones end at once: clinigym.css); an infinite
    # one (a spinner) never ends, so not it.
    assert busy(ohif, """window.fade = document.body.appendChild(document.createElement('div')).animate(
        [{opacity: 1}, {opacity: 0}], {duration: 1500}); clinigymBusy(0)""") is True
    assert busy(ohif, """window.fade.cancel(); document.body.appendChild(document.createElement('div')).animate(
        [{opacity: 0}, {opacity: 1}], {duration: 300, iterations: Infinity}); clinigymBusy(0)""") is False

def test_a_step_waits_for_what_a_page_timer_draws(ohif):
    frame = ohif.display.grab()
    assert not np.all(frame.rgb[540, 960] == (255, 0, 0))
    # Drawn 0.45 s from now: after the 0.2 s idle window, while Chromium sleeps.
    busy(ohif, RED_LATER % 450)
    t = time.monotonic()
    settled, ok = ohif.settle(since=frame)
    assert ok and time.monotonic() - t >= 0.45
    assert tuple(settled.rgb[540, 960]) == (255, 0, 0)
