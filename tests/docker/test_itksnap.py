"""ITK-SNAP 3.6 (Debian 11) in its container, on the real program: no first-run dialog, the
main window maximized, the same start screen at every reset, a series opened from the command
line. (Every scenario's oracle, random-agent and start-state checks are in test_live.py.)"""
from __future__ import annotations

import numpy as np
import pytest
from Xlib import X

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def itksnap(backends):
    return backends("itksnap")   # its default backend: a container (Debian 11)


def maximized(display) -> bool:
    """Whether the window manager holds the (only) client window maximized both ways."""
    x = display._x
    root = x.screen().root
    clients = root.get_full_property(x.intern_atom("_NET_CLIENT_LIST"), X.AnyPropertyType).value
    assert len(clients) == 1
    state = x.create_resource_object("window", clients[0]).get_full_property(
        x.intern_atom("_NET_WM_STATE"), X.AnyPropertyType)
    wanted = {x.intern_atom("_NET_WM_STATE_MAXIMIZED_VERT"), x.intern_atom("_NET_WM_STATE_MAXIMIZED_HORZ")}
    return state is not None and wanted <= set(state.value)


def test_start_is_maximized_without_dialogs_and_the_same_every_reset(itksnap):
    first = itksnap.reset()
    # No "Allow Automatic Update Checks?" question; the launcher maximized the window.
    assert itksnap.display.window_titles() == ["ITK-SNAP"]
    assert maximized(itksnap.display)
    assert "unmaximized" not in itksnap.log_tail("itksnap", 10**6)   # mapped maximized (openbox rule)
    second = itksnap.reset()
    assert np.array_equal(first.raw, second.raw)
    # A fixture file on the command line opens its whole series (the image association).
    args = ["-g", "${STATE}/studies/ct-chest/IMG0001.dcm"]
    loaded = itksnap.reset(args)
    assert itksnap.display.window_titles() == ["IMG0001.dcm - New Segmentation - ITK-SNAP"]
    prefs = (itksnap.pristine / "home/.itksnap.org/ITK-SNAP/UserPreferences.xml").read_text()
    assert prefs.count("<entry key=\"Element[") == 3 and "image associations" not in prefs
    # Paint and move the cursor, then reset: nothing of it survives (no state outside the
    # restored folder, no synchronization between the old and the new program).
    itksnap.display.click(105, 99)      # paintbrush
    itksnap.display.click(549, 290)     # a stroke in the axial view
    itksnap.settle()
    assert not np.array_equal(loaded.raw, itksnap.display.grab().raw)
    assert np.array_equal(loaded.raw, itksnap.reset(args).raw)
    procs = itksnap._run(["ps", "-eo", "args"], "/", {"PATH": "/usr/bin:/bin"}, 10)[1]
    assert procs.count("/usr/lib/snap-3.6.0/ITK-SNAP") == 1   # the killed one is gone
