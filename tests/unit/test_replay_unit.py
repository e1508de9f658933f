"""`clinigym replay` on the real programs: a recorded episode, re-executed from a
fresh reset, reproduces its screens and outcomes (also a failed one), and a
tampered recording is reported as not matching."""
from __future__ import annotations

import numpy as np
import pytest

from clinigym.cli.main import build_parser
from clinigym.eval.replay import Similarity, similarity
from clinigym.spec.scenarios import all_scenarios

SCENARIOS = {s.key: s for s in all_scenarios()}
ORTHANC, DICOMSCOPE = "orthanc/open-patient-study", "dicomscope/medspot-09-view-image"


def cli(*argv: str) -> int:
    args = build_parser().parse_args(list(argv))
    return args.func(args)


def test_similarity_measure():
    a = np.zeros((100, 100, 3), np.uint8)
    b = a.copy()
    assert similarity(a, b).identical == 1.0 and similarity(a, b).matches()
    b[0, :2] = (255, 0, 0)          # 2 of 10,000 pixels differ: 0.9998 identical
    s = similarity(a, b)
    assert s.differing == 2 and s.identical == pytest.approx(0.9998)
    assert not s.matches() and s.matches(0.999)
    assert s.mad == pytest.approx(2 * 255 / (100 * 100 * 3))
    ignore = np.zeros((100, 100), bool)
    ignore[0, 0] = True             # one of the two left out: 1 of 9,999 differs
    s = similarity(a, b, ignore)
    assert s.differing == 1 and s.identical == pytest.approx(9998 / 9999)
    assert s.mad == pytest.approx(255 / (9999 * 3))
    ignore[0, 1] = True
    assert similarity(a, b, ignore) == Similarity(1.0, 0.0, 0)
    assert similarity(a, b, np.ones((100, 100), bool)) == Similarity(1.0, 0.0, 0)


def test_help(capsys):
    with pytest.raises(SystemExit) as exc:
        cli("replay", "--help")
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "usage: clinigym replay" in out and "--threshold" in out and "--json" in out


