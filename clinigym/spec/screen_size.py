"""What of a scenario holds only at the screen size it was measured at.

Targets by meaning (an element of the accessibility tree, a DOM selector) are found on
the screen at any size, and the programs lay their windows out for the screen they get
(`${SCREEN_WIDTH}`, `${SCREEN_HEIGHT}` in program files). Pixels are not: a `box` or
`box_percent` target (a step's, a set-up step's, a drag's end, a `changed` condition's), a
`part` of an element (fractions of its box: right for an image fitted to its view, wrong
for a list whose rows keep their pixels when the list grows) and a `screen` check (a region
compared with a recorded reference image) were measured on the 1920x1080 screen
(`MEASURED_AT`). A window laid out for another size does not put its button at the same
pixels, nor at the same fraction of the screen, so such a scenario is refused at any other
size rather than judged against the wrong place (`check_screen_size`). `wall_clock` boxes
only mask `clinigym validate`'s comparison of recordings and judge nothing.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from clinigym.core.errors import SpecError

if TYPE_CHECKING:   # the scenario's module checks sizes with this one: no import at run time
    from clinigym.spec.conditions import Target, _Condition
    from clinigym.spec.scenarios import Scenario

MEASURED_AT = (1920, 1080)   # the screen every pixel box and reference image of a scenario belongs to


def _bound_target(where: str, target: Target | None) -> list[tuple[str, str]]:
    if target is None:
        return []
    if target.kind == "box":
        return [(where, f"a `{'box' if target.box is not None else 'box_percent'}` target")]
    if target.part is not None:
        return [(where, "a `part` of an element (fractions of a box whose content may not scale with it)")]
    return []


def _bound_conditions(where: str, conditions: Iterable[_Condition]) -> list[tuple[str, str]]:
    found = []
    for i, cond in enumerate(conditions):
        if cond.kind == "screen":
            found.append((f"{where}[{i}]", "a `screen` check (a reference image in screen pixels)"))
        elif cond.kind == "changed" and cond.value.kind == "box":
            found.append((f"{where}[{i}]", "a `changed` region given as a box"))
    return found


def pixel_bound(scenario: Scenario) -> list[tuple[str, str]]:
    """Every place of `scenario` that is in pixels of the 1920x1080 screen, as (field, what);
    empty when it runs at any size."""
    found = []
    for i, setup in enumerate(scenario.setup):
        found += _bound_target(f"setup[{i}].target", setup.target)
        found += _bound_target(f"setup[{i}].end_target", setup.end_target)
        found += _bound_conditions(f"setup[{i}].until", setup.until)
    for i, step in enumerate(scenario.steps):
        found += _bound_target(f"steps[{i}].target", step.target)
        found += _bound_target(f"steps[{i}].end_target", step.end_target)
        found += _bound_conditions(f"steps[{i}].transition", step.transition)
    return found + _bound_conditions("check", scenario.check)


def check_screen_size(scenario: Scenario, width: int, height: int) -> None:
    """A SpecError naming the scenario, the first pixel-bound field and why, when the
    scenario cannot be judged on a `width` x `height` screen."""
    if (width, height) == MEASURED_AT:
        return
    bound = pixel_bound(scenario)
    if bound:
        more = f" (and {len(bound) - 1} more)" if len(bound) > 1 else ""
        field, what = bound[0]
        raise SpecError(scenario.path, field, f"{what}{more} holds only on the {MEASURED_AT[0]}x{MEASURED_AT[1]} "
                        f"screen it was measured on, not {width}x{height}: run {scenario.key} at "
                        f"{MEASURED_AT[0]}x{MEASURED_AT[1]}, or give these places by element or selector")
