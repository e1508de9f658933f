"""Which scenarios `make test` runs: the first of every program (by id), so that each
program is exercised end to end within the time limit (with two, `make test` took 37.5
minutes; the plan-mode tests take each program's second); `make test-all` runs every one.
Information tasks (one step, judged on the answer) are chosen only among themselves:
`test_info_tasks.py` covers them, and the other tests need the multi-step workflows."""
from __future__ import annotations

import pytest

from clinigym.spec.scenarios import first_per_program

PER_PROGRAM = 1


def representative(scenarios, per_program: int = PER_PROGRAM, offset: int = 0) -> list:
    """pytest parameters, every scenario marked slow but `per_program` of each program (by id,
    after the first `offset`: two tests of one mode can cover different scenarios)."""
    scenarios = list(scenarios)
    pool = [s for s in scenarios if not s.answer] or scenarios
    chosen = ({s.key for s in first_per_program(pool, offset + per_program)}
              - {s.key for s in first_per_program(pool, offset)})
    return [pytest.param(s, id=s.key, marks=[] if s.key in chosen else [pytest.mark.slow])
            for s in sorted(scenarios, key=lambda s: s.key)]
