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

from typing import Any

from clinigym.core.errors import SpecError

MEASURED_AT = (1920, 1080)   # the screen every pixel box and reference image of a scenario belongs to


def _bound_conditions(where: str, conditions: list[Any]) -> list[tuple[str, str]]:
    found = []
    for i, cond in enumerate(conditions):
        if cond.kind == "screen":
            found.append((f"{where}[{i}]", "a `screen` check (a reference image in screen pixels)"))
        elif cond.kind == "changed" and cond.value.kind == "box":
            found.append((f"{where}[{i}]", "a `changed` region given as a box"))
    return found


def pixel_bound(scenario: Any) -> list[tuple[str, str]]:
    """Every place of `scenario` (a `clinigym.spec.scenarios.Scenario`) that is in pixels
    of the 1920x1080 screen, as (field, what); empty when it runs at any size."""
    found = []
    for part, steps in (("setup", scenario.setup), ("steps", scenario.steps)):
        for i, step in enumerate(steps):
            for name in ("target", "end_target"):
                target = getattr(step, name)
                if target is not None and target.kind == "box":
                    kind = "box" if target.box is not None else "box_percent"
                    found.append((f"{part}[{i}].{name}", f"a `{kind}` target"))
                elif target is not None and target.part is not None:
                    found.append((f"{part}[{i}].{name}", "a `part` of an element (fractions of a box whose "
                                                         "content may not scale with it)"))
            found += _bound_conditions(f"{part}[{i}].{'until' if part == 'setup' else 'transition'}",
                                       step.until if part == "setup" else step.transition)
    return found + _bound_conditions("check", scenario.check)


def check_screen_size(scenario: Any, width: int, height: int) -> None:
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
