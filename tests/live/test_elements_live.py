"""Accessibility trees of the local programs (issue #37): with accessibility on, one reset per
program, the elements of one scenario's first steps are found by role and name in the tree
the program itself gives, each holding its step's target; the buses leave nothing behind."""
from __future__ import annotations

import os
import threading

import pytest
from elementcheck import nothing_left, row_with_cell, walk_scenario

from clinigym.core.elements import Selector
from clinigym.runtime.a11y.bus import bus_processes
from clinigym.runtime.backends import make_backend
from clinigym.runtime.procfs import comm
from clinigym.runtime.waiting import wait_for
from clinigym.spec.apps import load_app
from clinigym.spec.paths import builtin_root

SCENARIOS = builtin_root() / "scenarios"


def test_aeskulap_menus_by_name_and_nothing_left():
    walk = walk_scenario(str(SCENARIOS / "aeskulap/open-study-file.yaml"), [
        Selector(role="menu item", name="File", within=Selector(role="menu bar")),
        Selector(role="menu item", name="Open", within=Selector(role="menu item", name="File")),
    ])
    assert [(e.role, e.name) for e in walk.found] == [("menu item", "File"), ("menu item", "Open")]
    # The session bus, the launcher it started, the launcher's bus and the registry: each carries
    # this run's owner mark (a sweep finds them), and none is left once the environment closed.
    assert walk.bus_comms >= {"dbus-daemon", "at-spi-bus-laun", "at-spi2-registr"}
    assert set(walk.bus_owners.values()) == {str(os.getpid())}
    assert walk.bus_folder is not None and nothing_left(walk.bus_folder) == []
    assert not walk.bus_folder.exists()


def test_gnuhealth_menu_rows_by_name():
    walk = walk_scenario(str(SCENARIOS / "gnuhealth/add-allergy.yaml"), [
        Selector(role="table cell", name="Health"),
        Selector(role="table cell", name="Patients"),
    ])
    assert [e.name for e in walk.found] == ["Health", "Patients"]


def test_dicomscope_icon_buttons_by_their_tooltips():
    walk = walk_scenario(str(SCENARIOS / "dicomscope/medspot-01-flip.yaml"), [
        Selector(role="toggle button", name="Flip", within=Selector(name="Processing")),
    ])
    assert walk.found[0].role == "toggle button"


def test_orthanc_explorer_links_by_name():
    walk = walk_scenario(str(SCENARIOS / "orthanc/anonymize-study.yaml"), [
        Selector(role="link", name="MR BRAIN PHANTOM*"),
        Selector(role="link", name="Anonymize"),
    ])
    assert walk.found[1].name == "Anonymize"


def test_ohif_study_row_by_its_cell_and_button_by_name():
    walk_scenario(str(SCENARIOS / "ohif/info-study-date.yaml"), [
        row_with_cell("row", "PHANTOM, BOB"),
        Selector(role="button", name="Basic Viewer"),
    ])


def test_an_element_target_resolves_to_its_one_element_s_box():
    from clinigym.core.geometry import Box
    from clinigym.runtime.backends import make_backend
    from clinigym.spec.apps import load_app
    from clinigym.spec.conditions import Target
    backend = make_backend(load_app("aeskulap"), accessibility=True)
    try:
        backend.reset()
        file_menu = backend.resolve(Target.model_validate(
            {"element": {"role": "menu item", "name": "File", "within": {"role": "menu bar"}}}))
        assert file_menu is not None and file_menu.contains(22, 32)
        part = backend.resolve(Target.model_validate(
            {"element": {"role": "menu item", "name": "File"}, "part": [0, 0, 0.5, 0.5]}))
        assert part == Box(file_menu.x1, file_menu.y1, (file_menu.x1 + file_menu.x2) / 2,
                           (file_menu.y1 + file_menu.y2) / 2)
        assert backend.resolve(Target.model_validate({"element": {"role": "menu item", "name": "Nope"}})) is None
        with pytest.raises(ValueError, match=r"aeskulap: the selector role 'menu item' names 4 elements \(.*"
                                             r"menu item\[0\] 'File'.*\); narrow it with within or index"):
            backend.resolve(Target.model_validate({"element": {"role": "menu item"}}))
    finally:
        backend.close()


def test_environments_asked_at_once_share_one_bus():
    """A reset's restore commands get their environment on a thread of their own while its
    first process starts: both get the one bus pair (two had taken each other's sockets and,
    closing, each other's processes: the registry stopped answering)."""
    backend = make_backend(load_app("aeskulap"), accessibility=True)
    try:
        start = threading.Barrier(4)
        envs: list[dict[str, str]] = []

        def ask() -> None:
            env: dict[str, str] = {}
            start.wait()
            backend.a11y.apply(env, True)
            envs.append(env)

        threads = [threading.Thread(target=ask) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(envs) == 4 and all(e == envs[0] for e in envs)
        folder = backend.a11y.bus.folder
        # The session bus and the AT-SPI bus its launcher started: one of each.
        wait_for(lambda: [comm(p) for p in bus_processes(folder)].count("at-spi-bus-laun") == 1, 10, "the launcher")
        assert sorted(comm(p) for p in bus_processes(folder)) == ["at-spi-bus-laun", "dbus-daemon", "dbus-daemon"]
    finally:
        backend.close()
    assert nothing_left(folder) == []
