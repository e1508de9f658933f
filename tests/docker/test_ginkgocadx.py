"""Ginkgo CADx 3.8.8 (Debian 11) in its container, on the real program: no first-run
dialog, the same start screen at every reset, the prepared history. (Every scenario's
oracle, random-agent and start-state checks are in test_live.py, for every program.)"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def ginkgo(backends):
    return backends("ginkgocadx")   # its default backend: a container (Debian 11)


def test_start_has_no_first_run_dialog_and_is_the_same_every_reset(ginkgo):
    first = ginkgo.reset()
    assert ginkgo.display.window_titles() == ["Ginkgo CADx"]   # no licence, tips or update dialog
    second = ginkgo.reset()
    assert np.array_equal(first.raw, second.raw)
    # The prepared history (fixture studies linked, dates pinned) without the lock file
    # of the program that made it.
    home = ginkgo.pristine / "home"
    assert (home / ".ginkgocadx/DICOMDIR/ginkgodatabase_2.1.db").is_file()
    assert not (home / "Ginkgo-root").exists()
    # A fourth study that is not in the history, in the folder where the history's
    # 'Open File' chooser opens (MedSPOT task 0 links it).
    incoming = ginkgo.pristine / "incoming/IMG0001.dcm"
    assert b"PHANTOM^ERIN" in incoming.read_bytes()
    assert b"PHANTOM^ERIN" not in (home / ".ginkgocadx/DICOMDIR/ginkgodatabase_2.1.db").read_bytes()
