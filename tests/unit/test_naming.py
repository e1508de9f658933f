"""Naming a target box by the program's own element (`clinigym.core.naming`), on hand-made
trees: the element that is the target, the simplest selector that names it alone, an
anchored part inside an opaque widget, and the reason when nothing can be named."""
from __future__ import annotations

from clinigym.core.elements import Raw, Selector, assemble
from clinigym.core.geometry import Box
from clinigym.core.naming import name_target, selector_data
from clinigym.spec.conditions import Target

TREE = assemble([
    Raw("app", None, "application", "viewer"),
    Raw("w", "app", "frame", "Viewer", box=Box(0, 0, 1000, 800)),
    Raw("bar", "w", "menu bar", box=Box(0, 0, 1000, 30)),
    Raw("file", "bar", "menu item", "File", box=Box(0, 0, 40, 30)),
    Raw("view", "bar", "menu item", "View", box=Box(40, 0, 80, 30)),
    Raw("d", "w", "dialog", "Open", box=Box(200, 200, 800, 600)),
    Raw("name", "d", "text", "", box=Box(220, 220, 780, 245)),
    Raw("ok", "d", "push button", "OK", box=Box(700, 550, 780, 580)),
    Raw("p1", "w", "panel", "Left", box=Box(0, 40, 100, 100)),
    Raw("b1", "p1", "push button", "Apply", box=Box(10, 50, 90, 70)),
    Raw("p2", "w", "panel", "Right", box=Box(900, 40, 1000, 100)),
    Raw("b2", "p2", "push button", "Apply", box=Box(910, 50, 990, 70)),
    Raw("img", "w", "drawing area", "Image view", box=Box(100, 650, 900, 790)),
    Raw("odd", "w", "push button", "Zoom [x2]", box=Box(920, 700, 990, 720)),
])


def test_a_named_element_is_named_by_role_and_name():
    naming = name_target(TREE, Box(2, 2, 38, 28))           # a hand-measured box inside the File menu
    assert naming.selector == Selector(role="menu item", name="File") and naming.part is None
    assert naming.target_data() == {"element": {"role": "menu item", "name": "File"}}


def test_an_unnamed_element_is_named_within_its_nearest_named_ancestor():
    naming = name_target(TREE, Box(220, 220, 780, 245))
    assert naming.target_data() == {"element": {"role": "text", "within": {"role": "dialog", "name": "Open"}}}


def test_two_alike_elements_are_told_apart_by_their_panels():
    assert name_target(TREE, Box(912, 52, 988, 68)).target_data() == {
        "element": {"role": "push button", "name": "Apply", "within": {"role": "panel", "name": "Right"}}}


def test_a_point_in_an_opaque_widget_is_anchored_to_it():
    naming = name_target(TREE, Box(480, 700, 520, 740))      # a click in the image view
    assert naming.target_data() == {"element": {"role": "drawing area", "name": "Image view"},
                                    "part": [0.475, 0.3571, 0.525, 0.6429]}
    # the scenario's target resolves back to the box (to the rounding of the fractions)
    back = Target.model_validate(naming.target_data()).in_element(naming.element.box)
    assert [round(v) for v in back.as_list()] == [480, 700, 520, 740]


def test_a_name_with_glob_characters_is_an_anchored_regex():
    naming = name_target(TREE, Box(920, 700, 990, 720), "instruction: Click 'Zoom [x2]'.")
    assert selector_data(naming.selector) == {"role": "push button", "name": {"regex": "^Zoom\\ \\[x2\\]$"}}
    assert TREE.find(naming.selector) == [naming.element]


def test_nothing_holding_the_centre_is_a_reason():
    naming = name_target(TREE, Box(150, 620, 170, 640))     # only the frame (a container) holds it
    assert naming.selector is None and naming.target_data() is None
    assert naming.reason.startswith("no element the program shows holds the target's centre")


def test_a_selector_written_out_loads_back():
    selector = Selector(role="push button", name="Apply", within=Selector(role="panel", name="Right"), index=0)
    assert Selector.from_data(selector_data(selector)) == selector


def test_a_name_with_a_digit_is_used_only_when_the_scenario_mentions_it():
    tree = assemble([
        Raw("w", None, "frame", "Client - doctor@127.0.0.1:23840", box=Box(0, 0, 1000, 800)),
        Raw("row", "w", "table cell", "", box=Box(0, 100, 1000, 120)),
        Raw("id", "row", "table cell", "CG0005", box=Box(0, 100, 100, 120)),
        Raw("age", "row", "table cell", "48y 10m 15d", box=Box(100, 100, 300, 120)),
    ])
    age = Box(110, 102, 290, 118)
    # the age changes from day to day, the port from run to run: neither names the target
    assert name_target(tree, age).reason.startswith("the smallest element holding it")
    assert name_target(tree, age, "patients: [CG0005]").reason.startswith("the smallest element holding it")
    assert name_target(tree, Box(2, 102, 98, 118), "patients: [CG0005]").target_data() == {
        "element": {"role": "table cell", "name": "CG0005"}}


def test_a_click_is_named_by_the_interactive_element_under_it():
    from clinigym.core.naming import name_point
    assert name_point(TREE, (20, 15), 50_000).target_data() == {"element": {"role": "menu item", "name": "File"}}
    assert name_point(TREE, (950, 60), 50_000).target_data() == {
        "element": {"role": "push button", "name": "Apply", "within": {"role": "panel", "name": "Right"}}}
    # the image view is no interactive element: a click in it is not named (its box stays)
    naming = name_point(TREE, (500, 700), 50_000)
    assert naming.selector is None and naming.reason == "no interactive element the program shows holds the point"
    # nor is one larger than the limit (a whole dialog a text field's click lands in)
    assert name_point(TREE, (230, 230), 50_000).target_data() == {
        "element": {"role": "text", "within": {"role": "dialog", "name": "Open"}}}
    assert name_point(TREE, (230, 230), 10_000).selector is None


def test_an_element_whose_name_changes_is_found_by_its_place_in_a_named_ancestor():
    tree = assemble([
        Raw("w", None, "frame", "Patients", box=Box(0, 0, 1000, 800)),
        Raw("id", "w", "table cell", "CG0005", box=Box(0, 100, 100, 120)),
        Raw("age", "w", "table cell", "48y 10m 15d", box=Box(100, 100, 300, 120)),
        Raw("box", "w", "check box", "Allergic to penicillin and other beta-lactams", box=Box(0, 200, 600, 220)),
    ])
    # the age is the second table cell of the frame, whatever it reads today
    assert name_target(tree, Box(110, 102, 290, 118)).target_data() == {
        "element": {"role": "table cell", "within": {"role": "frame", "name": "Patients"}, "index": 1}}
    # a check box's indicator: its whole labelled box, since a click on the label toggles it too
    assert name_target(tree, Box(2, 202, 18, 218)).target_data() == {
        "element": {"role": "check box", "name": "Allergic to penicillin and other beta-lactams"}}
    # a wide named cell is not: a small box in it is anchored to it with a part
    tree = assemble([Raw("w", None, "frame", "Patients", box=Box(0, 0, 1000, 800)),
                     Raw("c", "w", "table cell", "Allergies and intolerances", box=Box(0, 200, 600, 220))])
    assert name_target(tree, Box(2, 202, 18, 218)).target_data() == {
        "element": {"role": "table cell", "name": "Allergies and intolerances"}, "part": [0.0033, 0.1, 0.03, 0.9]}


def test_a_row_is_not_narrowed_to_the_cell_at_its_centre():
    tree = assemble([
        Raw("tab", None, "page tab", "Patients", box=Box(0, 0, 1000, 800)),
        Raw("table", "tab", "table", "", box=Box(0, 100, 1000, 500)),
        Raw("id", "table", "table cell", "CG0006", box=Box(0, 100, 200, 120)),
        Raw("name", "table", "table cell", "PHANTOM, FRANK", box=Box(200, 100, 400, 120)),
        Raw("age", "table", "table cell", "38y 9m 14d", box=Box(400, 100, 600, 120)),
        Raw("sex", "table", "table cell", "Male", box=Box(600, 100, 1000, 120)),
    ])
    # the row is the target, not the age cell at its centre (a fifth of it): named by the
    # cell the scenario mentions, as its row across the table
    naming = name_target(tree, Box(0, 100, 1000, 120), "Open PHANTOM, FRANK (CG0006).")
    assert naming.target_data() == {"element": {"role": "table cell", "name": "CG0006"}, "row": True}
    assert tree.row(naming.element) == Box(0, 100, 1000, 120)
    # two look-alikes: the name finds two cells, the PUID one
    tree = assemble([
        Raw("table", None, "table", "", box=Box(0, 100, 1000, 500)),
        Raw("n1", "table", "table cell", "PHANTOM, ALICE", box=Box(0, 100, 400, 120)),
        Raw("i1", "table", "table cell", "CG0001", box=Box(400, 100, 1000, 120)),
        Raw("n2", "table", "table cell", "PHANTOM, ALICE", box=Box(0, 120, 400, 140)),
        Raw("i2", "table", "table cell", "CG0101", box=Box(400, 120, 1000, 140)),
    ])
    assert name_target(tree, Box(2, 121, 998, 139), "PHANTOM, ALICE with PUID CG0101").target_data() == {
        "element": {"role": "table cell", "name": "CG0101"}, "row": True}
    # a PUID the scenario does not mention is no name: nothing names that row
    assert name_target(tree, Box(2, 121, 998, 139)).selector is None


def test_a_row_target_needs_an_element_and_no_part():
    import pytest
    from pydantic import ValidationError
    assert Target.model_validate({"element": {"name": "CG0001"}, "row": True}).row
    for bad in ({"box": [0, 0, 1, 1], "row": True}, {"element": {"name": "x"}, "part": [0, 0, 1, 1], "row": True}):
        with pytest.raises(ValidationError, match="row goes with element, without part"):
            Target.model_validate(bad)
