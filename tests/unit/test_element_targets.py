"""Targets by meaning: a scenario's `element` target (a selector on the program's
accessibility tree, and a part of its box), as the loader checks it and as it is found in
a tree. Exact values, no program."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from clinigym.core.elements import Raw, Selector, assemble
from clinigym.core.geometry import Box
from clinigym.spec.conditions import Target
from clinigym.spec.paths import builtin_root
from clinigym.spec.scenarios import load_scenario

MENU = {"role": "menu item", "name": "File", "within": {"role": "menu bar"}}


def test_an_element_target_holds_its_selector():
    target = Target.model_validate({"element": MENU})
    assert target.named == Selector(role="menu item", name="File", within=Selector(role="menu bar"))
    assert str(target.named) == "role 'menu item' name 'File' within (role 'menu bar')"
    assert target.in_element(Box(3, 21, 41, 44)) == Box(3, 21, 41, 44)
    assert Target.model_validate({"box": [0, 0, 1, 1]}).named is None


def test_a_part_is_a_region_of_the_element_s_box():
    target = Target.model_validate({"element": {"role": "drawing area"}, "part": [0.25, 0.5, 0.75, 1.0]})
    assert target.in_element(Box(100, 200, 300, 400)) == Box(150, 300, 250, 400)


@pytest.mark.parametrize(("data", "message"), [
    ({"element": MENU, "box": [0, 0, 1, 1]}, "give exactly one of element, box, box_percent, selector"),
    ({"element": {"role": "menu item", "nmae": "File"}},
     "element: unknown key(s) nmae; known: role, name, within, index"),
    ({"element": {"name": {"regex": "("}}}, "element: selector regex '('"),
    ({"element": {"index": 0}}, "an empty selector matches everything"),
    ({"box": [0, 0, 1, 1], "part": [0, 0, 1, 1]}, "part goes with element"),
    ({"element": MENU, "part": [0.5, 0, 0.5, 1]}, "fractions of the element's box"),
    ({"element": MENU, "part": [0, 0, 1.5, 1]}, "fractions of the element's box"),
])
def test_a_malformed_element_target_says_what_is_wrong(data, message):
    with pytest.raises(ValidationError) as exc:
        Target.model_validate(data)
    assert message in str(exc.value)


def test_the_tree_finds_the_one_element_a_target_names():
    tree = assemble([
        Raw("w", None, "frame", "Aeskulap", box=Box(0, 0, 800, 600)),
        Raw("bar", "w", "menu bar", box=Box(0, 19, 800, 46)),
        Raw("file", "bar", "menu item", "File", box=Box(3, 21, 41, 44)),
        Raw("d", "w", "dialog", "Open DICOM Image files", box=Box(100, 100, 700, 500)),
        Raw("f", "d", "menu item", "File", box=Box(110, 110, 150, 130)),
    ])
    target = Target.model_validate({"element": MENU})
    assert [e.box for e in tree.find(target.named)] == [Box(3, 21, 41, 44)]
    both = Target.model_validate({"element": {"role": "menu item", "name": "File"}})
    assert len(tree.find(both.named)) == 2      # ambiguous: resolving it is an error naming both


def test_a_scenario_with_an_element_target_reads_the_tree():
    scenarios = builtin_root() / "scenarios"
    assert load_scenario(scenarios / "aeskulap/open-study-file.yaml").reads_tree
    assert not load_scenario(scenarios / "orthanc/delete-study.yaml").reads_tree


def test_a_changed_region_named_by_element_reads_the_tree(tmp_path):
    text = ("app: orthanc\noverview: o\ngoal: g\nsteps:\n"
            "  - instruction: i\n    action: click\n    target: {box: [0, 0, 10, 10]}\n"
            "    transition: {changed: {element: {role: link, name: All patients}}}\n")
    (tmp_path / "named.yaml").write_text(text)
    (tmp_path / "boxed.yaml").write_text(text.replace("{element: {role: link, name: All patients}}",
                                                      "{box: [0, 0, 10, 10]}"))
    assert load_scenario(tmp_path / "named.yaml").reads_tree
    assert not load_scenario(tmp_path / "boxed.yaml").reads_tree
