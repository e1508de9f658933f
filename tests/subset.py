"""Which scenarios `make test` runs: the first few of every program (by id), so that each
program is exercised end to end within the time limit; `make test-all` runs every one."""
from __future__ import annotations

import pytest

from clinigym.spec.scenarios import first_per_program

PER_PROGRAM = 4


def representative(scenarios, per_program: int = PER_PROGRAM) -> list:
    """pytest parameters, the scenarios beyond the first `per_program` of a program marked slow."""
    scenarios = list(scenarios)
    chosen = {s.key for s in first_per_program(scenarios, per_program)}
    return [pytest.param(s, id=s.key, marks=[] if s.key in chosen else [pytest.mark.slow])
            for s in sorted(scenarios, key=lambda s: s.key)]
