"""The program file's `accessibility:` block, and the readers it names (no program runs)."""
from __future__ import annotations

from typing import get_args

import pytest
from test_specs import refused_then_loaded

from clinigym.core.geometry import Box
from clinigym.runtime.a11y import READERS
from clinigym.runtime.a11y.atspi import ROLES, _texts, states_of
from clinigym.spec.apps import A11ySource, load_app

PROCESS = "  - {name: lab, command: [xmessage, hi]}\n"
BROWSER = "  - {name: web, browser: 'http://127.0.0.1:1/'}\n"


@pytest.mark.parametrize("processes, bad, good, field, problem", [
    (PROCESS + "accessibility: {source: dom}\n", "dom", "atspi", "accessibility.source",
     "Input should be 'atspi' or 'devtools'"),
    (PROCESS + "accessibility: {source: atspi, env: {NO_AT_BRIDGE: '0'}}\n", "NO_AT_BRIDGE", "GTK_MODULES",
     "accessibility.env", "env: NO_AT_BRIDGE is set by clinigym when accessibility is on"),
    (PROCESS + "accessibility: {source: atspi, env: {'GTK MODULES': x}}\n", "GTK MODULES", "GTK_MODULES",
     "accessibility.env", "env: 'GTK MODULES' is not an environment variable name"),
    (PROCESS + "accessibility: {source: atspi, envs: {}}\n", "envs", "env", "accessibility.envs", "unknown field"),
    (BROWSER + "accessibility: {source: devtools}\n", "devtools}", "devtools}\nports: [cdp]\nport_block: 17\n"
     "dom_port: cdp", "", "accessibility.source devtools needs a dom_port"),
    (BROWSER + "ports: [cdp]\nport_block: 17\ndom_port: cdp\naccessibility: {source: devtools, env: {A: b}}\n",
     ", env: {A: b}", "", "", "accessibility.env goes with source atspi"),
    (PROCESS + "accessibility: {source: atspi, walk: tree}\n", "tree", "levels", "accessibility.walk",
     "Input should be 'collection' or 'levels'"),
    (BROWSER + "ports: [cdp]\nport_block: 17\ndom_port: cdp\naccessibility: {source: devtools, walk: levels}\n",
     ", walk: levels", "", "accessibility", "walk: levels goes with source atspi"),
])
def test_accessibility_block_errors_name_the_problem(tmp_path, processes, bad, good, field, problem):
    app = refused_then_loaded(tmp_path, processes, bad, good, field, problem)
    assert app.accessibility is not None


def test_every_source_has_a_reader_and_every_program_a_source():
    assert set(READERS) == set(get_args(A11ySource))
    wanted = {"aeskulap": ("atspi", {"GTK_MODULES": "gail:atk-bridge"}),
              "itksnap": ("atspi", {"QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1"}),
              "gnuhealth": ("atspi", {}), "ginkgocadx": ("atspi", {}),
              "orthanc": ("devtools", {}), "ohif": ("devtools", {})}
    for name, (source, env) in wanted.items():
        a11y = load_app(name).accessibility
        assert (a11y.source, a11y.env) == (source, env), name
    dicomscope = load_app("dicomscope")
    # the Java wrapper's GetMatches visits every hidden component; the others' is cheap
    assert {name: load_app(name).accessibility.walk for name in (*wanted, "dicomscope")} == {
        **{name: "collection" for name in wanted}, "dicomscope": "levels"}
    assert "-Djavax.accessibility.assistive_technologies=org.GNOME.Accessibility.AtkWrapper" in \
        dicomscope.accessibility.env["JAVA_TOOL_OPTIONS"].split()
    assert {"libatk-wrapper-java", "libatk-wrapper-java-jni"} <= set(dicomscope.debian_packages)
    assert {"libatk-adaptor", "libgail-common"} <= set(load_app("aeskulap").debian_packages)


def test_atspi_roles_and_states_by_number():
    # AtspiRole and AtspiStateType as libatspi numbers them
    assert len(ROLES) == 130
    assert (ROLES[7], ROLES[23], ROLES[43], ROLES[56], ROLES[75], ROLES[129]) == (
        "check box", "frame", "push button", "table cell", "application", "push button menu")
    assert states_of((1 << 25) | (1 << 30) | (1 << 39) | (1 << 43)) == {"showing", "visible", "is_default",
                                                                         "read_only"}


def test_chromium_nodes_join_their_boxes_and_ignored_ones_pass_their_children_up():
    from clinigym.core.elements import assemble
    from clinigym.runtime.a11y.devtools_ax import _boxes, _raws
    # Two documents: the page (scrolled by 10 px) and a frame whose <iframe> (node 2) is at (100, 60)
    # in the page.
    snapshot = {"documents": [
        {"scrollOffsetY": 10,
         "nodes": {"backendNodeId": [1, 2, 3], "contentDocumentIndex": {"index": [1], "value": [1]}},
         "layout": {"nodeIndex": [0, 1, 2], "bounds": [[0, 0, 800, 600], [100, 60, 200, 100], [10, 20, 30, 40]]}},
        {"nodes": {"backendNodeId": [7]}, "layout": {"nodeIndex": [0], "bounds": [[5, 5, 20, 10]]}}]}
    boxes = _boxes(snapshot, 0, 80, 1)   # the viewport starts 80 px down the screen
    assert boxes[3] == Box(10, 90, 40, 130) and boxes[7] == Box(105, 135, 125, 145)
    nodes = [{"nodeId": "1", "role": {"value": "RootWebArea"}, "name": {"value": "Page"}, "childIds": ["2"],
              "backendDOMNodeId": 1},
             {"nodeId": "2", "ignored": True, "parentId": "1", "childIds": ["3"], "backendDOMNodeId": 2},
             {"nodeId": "3", "parentId": "2", "role": {"value": "button"}, "name": {"value": "OK\u00a0"},
              "backendDOMNodeId": 3, "properties": [{"name": "focusable", "value": {"value": True}},
                                                    {"name": "checked", "value": {"value": "mixed"}}]}]
    keys: dict[int, str] = {}
    tree = assemble(_raws(nodes, boxes, "f:", None, keys))
    assert [(e.path, e.name, e.box, e.states) for e in tree.walk()] == [
        ("RootWebArea[0]", "Page", Box(0, 70, 800, 670), frozenset()),
        ("RootWebArea[0]/button[0]", "OK", Box(10, 90, 40, 130), {"focusable", "indeterminate"})]
    assert keys == {1: "f:1", 3: "f:3"}


def test_name_description_and_parent_from_one_get_all_or_from_gets():
    get_all = ({"Parent": ("(so)", (":1.0", "/a/5")), "Name": ("s", "OK"), "Description": ("s", "Save"),
                "ChildCount": ("i", 0)},)
    assert _texts([get_all]) == ("OK", "Save", (":1.0", "/a/5"))
    assert _texts([None]) == ("", "", None)   # no reply: nothing known, never a guess
    assert _texts([(("s", "OK"),), (("s", ""),), (("(so)", (":1.0", "/a/5")),)]) == ("OK", "", (":1.0", "/a/5"))
    assert _texts([(("s", "OK"),), None]) == ("OK", "", None)   # the walk knows the parent: not asked
