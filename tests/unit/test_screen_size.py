"""The screen size: parsing and bounds, `clinigym run --screen`, its place in a run's spec,
and which scenarios hold only at 1920x1080 (pure logic; the live programs at other sizes
are tests/live/test_screen_sizes.py)."""
from __future__ import annotations

import json

import pytest
from PIL import Image

from clinigym.cli.main import build_parser
from clinigym.core.errors import SpecError
from clinigym.run.schedule import RunSpec
from clinigym.runtime.display import Geometry
from clinigym.spec.scenarios import load_scenario
from clinigym.spec.screen_size import check_screen_size, pixel_bound


@pytest.mark.parametrize("text, size", [("1280x800", (1280, 800)), (" 2560X1440 ", (2560, 1440)),
                                        ("640x480", (640, 480)), ("7680x4320", (7680, 4320))])
def test_sizes_parse(text, size):
    assert Geometry.parse(text) == Geometry(*size, 24)


@pytest.mark.parametrize("text, problem", [
    ("1280", "screen size '1280': expected WIDTHxHEIGHT in pixels, e.g. 1280x800"),
    ("1280x", "screen size '1280x': expected WIDTHxHEIGHT in pixels, e.g. 1280x800"),
    ("1280*800", "screen size '1280*800': expected WIDTHxHEIGHT in pixels, e.g. 1280x800"),
    ("-1280x800", "screen size '-1280x800': expected WIDTHxHEIGHT in pixels, e.g. 1280x800"),
    ("639x480", "screen width 639: a whole number of pixels from 640 to 7680"),
    ("1280x4321", "screen height 4321: a whole number of pixels from 480 to 4320")])
def test_bad_sizes_are_named(text, problem):
    with pytest.raises(ValueError) as err:
        Geometry.parse(text)
    assert str(err.value) == problem


def test_the_default_and_typed_sizes():
    assert Geometry() == Geometry(1920, 1080, 24) and str(Geometry()) == "1920x1080"
    assert str(Geometry(2560, 1440)) == "2560x1440"
    for width in (1280.0, True, "1280"):
        with pytest.raises(ValueError, match=f"screen width {width!r}: a whole number"):
            Geometry(width, 800)


def test_run_takes_screen_checked_at_parse_time(capsys):
    parser = build_parser()
    assert parser.parse_args(["run", "--screen", "1280x800", "--out", "o"]).screen == Geometry(1280, 800)
    assert parser.parse_args(["run", "--out", "o"]).screen is None   # filled with 1920x1080 by the run
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["run", "--screen", "1280x80", "--out", "o"])
    assert exit_.value.code == 2
    assert ("argument --screen: screen height 80: a whole number of pixels from 480 to 4320"
            in capsys.readouterr().err)


def test_run_spec_keeps_the_screen():
    spec = RunSpec(("/s/a.yaml",), "oracle", screen=(2560, 1440))
    assert spec.to_json()["screen"] == [2560, 1440]
    assert RunSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
    assert spec.summary_fields()["screen"] == "2560x1440"
    default = RunSpec(("/s/a.yaml",), "oracle")
    assert default.screen == (1920, 1080) and "screen" not in default.summary_fields()
    # a run.json from before the screen size was a parameter ran at 1920x1080
    old = {k: v for k, v in default.to_json().items() if k != "screen"}
    assert RunSpec.from_json(old).screen == (1920, 1080)


STEP = """
  - instruction: Open it.
    action: click
    target: {target}
    transition: {transition}
"""


def scenario(tmp_path, target: str, transition: str, check: str = "[]"):
    path = tmp_path / "s.yaml"
    path.write_text("app: orthanc\noverview: o\nsteps:" + STEP.format(target=target, transition=transition)
                    + f"check: {check}\n")
    return load_scenario(path)


def test_targets_and_conditions_by_meaning_hold_at_any_size(tmp_path):
    s = scenario(tmp_path, "{selector: '#a'}", "{changed: {selector: '#b'}}", "[{dom_visible: '#c'}]")
    assert pixel_bound(s) == []
    check_screen_size(s, 1280, 800)   # no error


def test_pixel_boxes_and_references_are_listed(tmp_path):
    Image.new("RGB", (10, 10)).save(tmp_path / "ref.png")
    s = scenario(tmp_path, "{box: [0, 0, 10, 10]}", "[{changed: {box_percent: [0, 0, 5, 5]}}, {window: x}]",
                 "[{screen: {box: [0, 0, 10, 10], reference: ref.png}}]")
    assert pixel_bound(s) == [("steps[0].target", "a `box` target"),
                              ("steps[0].transition[0]", "a `changed` region given as a box"),
                              ("check[0]", "a `screen` check (a reference image in screen pixels)")]
    check_screen_size(s, 1920, 1080)   # where they were measured
    with pytest.raises(SpecError) as err:
        check_screen_size(s, 2560, 1440)
    assert str(err.value) == (
        f"{s.path}: steps[0].target: a `box` target (and 2 more) holds only on the 1920x1080 screen it was "
        f"measured on, not 2560x1440: run orthanc/s at 1920x1080, or give these places by element or selector")
