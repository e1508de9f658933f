"""Accessibility trees of the Docker-only programs (issue #37): the programs in their containers
register on the host's private AT-SPI bus through the mounted work folder; one reset each,
the elements of one scenario's first steps found by role and name."""
from __future__ import annotations

from elementcheck import nothing_left, opaque_at, walk_scenario

from clinigym.core.elements import Selector
from clinigym.spec.paths import builtin_root

SCENARIOS = builtin_root() / "scenarios"


def test_itksnap_menu_items_by_name_through_the_container():
    walk = walk_scenario(str(SCENARIOS / "itksnap/medspot-09-zoom-to-fit.yaml"), [
        Selector(role="menu item", name="Edit", within=Selector(role="menu bar")),
        Selector(role="menu item", name="Zoom"),
        Selector(role="menu item", name="Zoom to Fit in All Views"),
    ], backend="docker")
    assert [e.name for e in walk.found] == ["Edit", "Zoom", "Zoom to Fit in All Views"]
    assert nothing_left(walk.bus_folder) == []


def test_ginkgocadx_opaque_tool_strip_then_menu_item_by_name():
    walk = walk_scenario(str(SCENARIOS / "ginkgocadx/medspot-10-rotate-ccw.yaml"), [
        opaque_at("panel"),   # the eye icon is drawn inside a tool strip that exposes nothing
        Selector(role="menu item", name="Rotate 90º counter-clockwise"),
    ], backend="docker")
    assert walk.found[1].role == "menu item"
