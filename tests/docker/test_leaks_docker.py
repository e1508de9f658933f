"""Nothing an agent receives locates the answer, on the programs that run in containers: the
same checks as tests/live/test_leaks.py (tests/leakcheck.py), one short scenario of each."""
from __future__ import annotations

import pytest

from leakcheck import check_free_mode, check_steps_modes, hoarder_agent, scenarios_on  # noqa: F401  (autouse fixture)

SCENARIOS = scenarios_on("docker")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_strict_and_recovery_give_nothing_away(scenario, backends):
    check_steps_modes(scenario, backends(scenario.app))


@pytest.mark.parametrize("mode", ["plan", "goal"])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_plan_and_goal_modes_give_nothing_away(scenario, mode, backends):
    check_free_mode(scenario, mode, backends(scenario.app))
