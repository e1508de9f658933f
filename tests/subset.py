"""Which scenarios `make test` runs: the first few of every program (by id), so that each
program is exercised end to end within the time limit; `make test-all` runs every one."""
from __future__ import annotations

from collections import Counter

import pytest

PER_PROGRAM = 4


def representative(scenarios, per_program: int = PER_PROGRAM) -> list:
    """pytest parameters, the scenarios beyond the first `per_program` of a program marked slow."""
    seen: Counter = Counter()
    params = []
    for s in sorted(scenarios, key=lambda s: s.key):
        seen[s.app] += 1
        params.append(pytest.param(s, id=s.key, marks=[pytest.mark.slow] if seen[s.app] > per_program else []))
    return params
