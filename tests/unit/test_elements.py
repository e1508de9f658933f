"""The element model: names, paths, caps, selectors, text and JSON (pure logic)."""
from __future__ import annotations

import json

import pytest

from clinigym.core.elements import Caps, Raw, Selector, Tree, assemble, normalize_name
from clinigym.core.geometry import Box, Coordinates


def _tree() -> Tree:
    raws = [
        Raw("app", None, "application", "aeskulap"),
        Raw("win", "app", "frame", "Aeskulap", states=frozenset({"active", "showing"}), box=Box(0, 0, 800, 600)),
        Raw("bar", "win", "menu bar", box=Box(0, 0, 800, 20)),
        Raw("file", "bar", "menu item", "File", box=Box(0, 0, 40, 20)),
        Raw("help", "bar", "menu item", "Help", box=Box(40, 0, 80, 20)),
        Raw("dlg", "app", "dialog", "Open DICOM\u00a0Image files", box=Box(100, 100, 500, 400)),
        Raw("text", "dlg", "text", "", states=frozenset({"editable", "focused"}), value="a.dcm",
            box=Box(110, 120, 490, 140)),
        Raw("ok", "dlg", "push button", "Open ", description="Open the file", box=Box(400, 360, 480, 390)),
        Raw("icon", "dlg", "push button", "", description="Flip", box=Box(10, 360, 30, 380)),
        Raw("cancel", "dlg", "push button", "Cancel", box=Box(300, 360, 380, 390)),
    ]
    return assemble(raws, source="atspi")


def test_names_lose_zero_width_spaces_and_extra_whitespace():
    assert normalize_name("48y\u200b 10m\u200b\u200b 15d") == "48y 10m 15d"
    assert normalize_name("  OK\u00a0 ") == "OK"
    assert normalize_name("a\n\tb") == "a b"
    assert normalize_name(None) == ""


def test_paths_index_siblings_of_the_same_role():
    tree = _tree()
    assert [e.path for e in tree.walk()] == [
        "application[0]", "application[0]/frame[0]", "application[0]/frame[0]/menu bar[0]",
        "application[0]/frame[0]/menu bar[0]/menu item[0]", "application[0]/frame[0]/menu bar[0]/menu item[1]",
        "application[0]/dialog[0]", "application[0]/dialog[0]/text[0]",
        "application[0]/dialog[0]/push button[0]", "application[0]/dialog[0]/push button[1]",
        "application[0]/dialog[0]/push button[2]"]
    assert len(tree) == 10
    assert tree.source == "atspi" and tree.truncated is None
    assert tree.roots[0].children[1].name == "Open DICOM Image files"


def test_find_by_role_name_glob_regex_within_and_index():
    tree = _tree()
    assert [e.name for e in tree.find(Selector(role="push button", name="Open"))] == ["Open"]
    assert [e.name for e in tree.find(Selector(role="menu item", name="H*"))] == ["Help"]
    assert [e.name for e in tree.find(Selector(name="Open*"))] == ["Open DICOM Image files", "Open"]
    assert [e.name for e in tree.find(Selector(regex="^(File|Cancel)$"))] == ["File", "Cancel"]
    in_dialog = Selector(role="text", within=Selector(role="dialog", name="Open DICOM Image files"))
    assert [e.value for e in tree.find(in_dialog)] == ["a.dcm"]
    assert tree.find(Selector(role="text", within=Selector(role="frame"))) == []
    assert [e.name for e in tree.find(Selector(role="push button", index=1))] == ["Flip"]
    assert tree.find(Selector(role="push button", index=3)) == []
    # `within` is any ancestor, and its own `within` applies above it
    deep = Selector(role="menu item", within=Selector(role="menu bar", within=Selector(role="application")))
    assert [e.name for e in tree.find(deep)] == ["File", "Help"]
    assert tree.find(Selector(role="menu item", within=Selector(role="menu bar", within=Selector(role="dialog")))) == []
    # `states`: the element holds every one of them
    assert [e.value for e in tree.find(Selector(role="text", states=("focused",)))] == ["a.dcm"]
    assert [e.value for e in tree.find(Selector(role="text", states=("editable", "focused")))] == ["a.dcm"]
    assert tree.find(Selector(role="text", states=("focused", "checked"))) == []


def test_selector_from_scenario_data_and_its_errors():
    s = Selector.from_data({"role": "table cell", "name": {"regex": "^PHANTOM"},
                            "within": {"role": "dialog", "name": "Open"}, "index": 2})
    assert (s.role, s.name, s.regex, s.index) == ("table cell", None, "^PHANTOM", 2)
    assert s.within == Selector(role="dialog", name="Open")
    assert Selector.from_data({"role": "page tab", "states": ["selected"]}).states == ("selected",)
    with pytest.raises(ValueError, match=r"target\.within: unknown key\(s\) nam; known: role, name, within, index, "):
        Selector.from_data({"role": "text", "within": {"nam": "x"}}, "target")
    with pytest.raises(ValueError, match=r"selector\.name: a string or \{regex: PATTERN\}"):
        Selector.from_data({"name": {"glob": "x"}})
    with pytest.raises(ValueError, match="selector regex '\\(': "):
        Selector.from_data({"name": {"regex": "("}})
    with pytest.raises(ValueError, match="an empty selector matches everything"):
        Selector.from_data({"index": 0})
    with pytest.raises(ValueError, match=r"selector\.index: an integer; got 'x'"):
        Selector.from_data({"role": "text", "index": "x"})
    with pytest.raises(ValueError, match="must be >= 0"):
        Selector(role="text", index=-1)


def test_text_has_one_line_per_element():
    assert _tree().to_text().splitlines() == [
        '[1] application "aeskulap"',
        '  [2] frame "Aeskulap" (0,0,800,600) active',
        '    [3] menu bar "" (0,0,800,20)',
        '      [4] menu item "File" (0,0,40,20)',
        '      [5] menu item "Help" (40,0,80,20)',
        '  [6] dialog "Open DICOM Image files" (100,100,500,400)',
        '    [7] text "" (110,120,490,140) editable,focused value="a.dcm"',
        '    [8] push button "Open" (400,360,480,390) description="Open the file"',
        '    [9] push button "Flip" (10,360,30,380) description="Flip"',
        '    [10] push button "Cancel" (300,360,380,390)']


def test_json_round_trips_the_structure():
    data = json.loads(_tree().to_json())
    assert data["source"] == "atspi" and data["truncated"] is None
    text = data["roots"][0]["children"][1]["children"][0]
    assert text == {"role": "text", "name": "", "description": "", "states": ["editable", "focused"],
                    "value": "a.dcm", "box": [110, 120, 490, 140], "path": "application[0]/dialog[0]/text[0]",
                    "children": []}


def test_caps_cut_the_tree_and_say_which():
    raws = [Raw("r", None, "frame", box=Box(0, 0, 10, 10))]
    raws += [Raw(i, "r", "label", str(i), box=Box(0, 0, 1, 1)) for i in range(5)]
    raws += [Raw("deep", 0, "label", "deep", box=Box(0, 0, 1, 1))]
    tree = assemble(raws, Caps(width=3))
    assert [e.name for e in tree.roots[0].children] == ["0", "1", "2"] and tree.truncated == "width"
    tree = assemble(raws, Caps(count=4))
    assert len(tree) == 4 and [e.name for e in tree.walk()] == ["", "0", "deep", "1"] and tree.truncated == "count"
    tree = assemble(raws, Caps(depth=1), hit=["time"])
    assert len(tree) == 6 and tree.truncated == "depth,time"
    with pytest.raises(ValueError, match="caps must be positive"):
        Caps(count=0)


def test_off_screen_and_boxless_leaves_are_dropped():
    raws = [Raw("w", None, "frame", box=Box(0, 0, 100, 100)),
            Raw("menu", "w", "menu", "closed", box=Box(-2**31, -2**31, -2**31 + 50, -2**31 + 20)),
            Raw("item", "menu", "menu item", "Open", box=Box(-2**31, -2**31, -2**31 + 50, -2**31 + 20)),
            Raw("filler", "w", "filler", box=Box(5, 5, 5, 5)),
            Raw("panel", "w", "panel"),
            Raw("b1", "panel", "push button", "A", box=Box(1, 1, 9, 9)),
            Raw("b2", "w", "push button", "B", box=Box(10, 10, 20, 20)),
            Raw("orphan", "gone", "label", "lost parent", box=Box(1, 1, 2, 2))]
    tree = assemble(raws, screen=(100, 100))
    assert [(e.path, e.name) for e in tree.walk()] == [
        ("frame[0]", ""), ("frame[0]/panel[0]", ""), ("frame[0]/panel[0]/push button[0]", "A"),
        ("frame[0]/push button[0]", "B"), ("label[0]", "lost parent")]


def test_boxes_map_to_observation_pixels():
    tree = assemble([Raw("w", None, "frame", box=Box(0, 0, 200, 100))])
    assert tree.to_obs(Coordinates(100, 50, 200, 100)).roots[0].box == Box(0, 0, 100, 50)
