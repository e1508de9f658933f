"""The `screen` condition: a region of the current screen against a reference PNG stored
beside the scenario (pure logic: made-up frames, real files)."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from clinigym.core.screen import Frame
from clinigym.spec.conditions import Condition, holds, screen_identity, screen_region
from clinigym.spec.files import SpecError
from clinigym.spec.scenarios import load_scenario

BOX = [10, 20, 30, 25]   # 20 x 5 = 100 pixels


def frame(seed: int = 0) -> Frame:
    """A 64 x 48 screen of random pixels, BGRA as grabbed."""
    bgra = np.random.default_rng(seed).integers(0, 256, (48, 64, 4), dtype=np.uint8)
    return Frame(bgra, 0.0)


def write_reference(path, screen: Frame, box=BOX):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(screen_region(screen, box)).save(path)
    return path


def screen_condition(reference, box=BOX, **extra):
    return Condition(screen={"box": box, "reference": str(reference), **extra})


def scenario_file(tmp_path, reference: str, box=BOX):
    path = tmp_path / "flip.yaml"
    path.write_text(f"""app: orthanc
overview: Flip the image.
steps:
  - {{instruction: Flip., action: click, target: {{box: [0, 0, 9, 9]}}, transition: {{window: x}}}}
check:
  - {{window: x}}
  - screen: {{box: {box}, reference: {reference}}}
""")
    return path


def test_region_is_rgb_of_the_box():
    screen = frame()
    region = screen_region(screen, BOX)
    assert region.shape == (5, 20, 3)
    assert np.array_equal(region, screen.rgb[20:25, 10:30])


def test_matching_reference_holds(tmp_path):
    screen = frame()
    cond = screen_condition(write_reference(tmp_path / "ref.png", screen))
    assert screen_identity(cond.screen, screen) == 1.0
    assert holds(cond, probe=None, after=screen)


def test_reference_differing_by_known_pixels(tmp_path):
    screen = frame()
    ref = tmp_path / "ref.png"
    write_reference(ref, screen)
    changed = screen.bgra.copy()
    changed[20, 10:15, 0] ^= 0xFF          # 5 of the box's 100 pixels, one channel each
    changed[40, 40, :3] ^= 0xFF            # outside the box: not looked at
    now = Frame(changed, 1.0)
    cond = screen_condition(ref)
    assert screen_identity(cond.screen, now) == 0.95
    assert not holds(cond, probe=None, after=now)                              # default 0.9999
    assert holds(screen_condition(ref, min_identical=0.95), probe=None, after=now)
    assert not holds(screen_condition(ref, min_identical=0.96), probe=None, after=now)


def test_other_screen_does_not_hold(tmp_path):
    cond = screen_condition(write_reference(tmp_path / "ref.png", frame(0)))
    assert screen_identity(cond.screen, frame(1)) < 0.01
    assert not holds(cond, probe=None, after=frame(1))


def test_reference_relative_to_the_scenario_file(tmp_path):
    write_reference(tmp_path / "references" / "flip.png", frame())
    scenario = load_scenario(scenario_file(tmp_path, "references/flip.png"))
    ref = scenario.check[1].screen
    assert ref.path == tmp_path / "references" / "flip.png"
    assert ref.reference == "references/flip.png"   # kept as written
    assert scenario.check[1].describe() == \
        "screen: {'box': [10, 20, 30, 25], 'reference': 'references/flip.png', 'min_identical': 0.9999}"
    assert holds(scenario.check[1], probe=None, after=frame())


def test_missing_reference_names_file_and_field(tmp_path):
    path = scenario_file(tmp_path, "references/gone.png")
    with pytest.raises(SpecError) as err:
        load_scenario(path)
    assert err.value.path == str(path)
    assert err.value.field == "check[1].screen.reference"
    assert str(tmp_path / "references" / "gone.png") in err.value.problem
    assert "no such file" in err.value.problem and "clinigym reference" in err.value.problem


def test_reference_of_another_size_is_an_error(tmp_path):
    write_reference(tmp_path / "references" / "small.png", frame(), box=[0, 0, 4, 4])
    with pytest.raises(SpecError, match=r"check\[1\]\.screen\.reference: .*small\.png is 4x4 pixels, the box 20x5"):
        load_scenario(scenario_file(tmp_path, "references/small.png"))


@pytest.mark.parametrize("box, problem", [
    ([30, 20, 10, 25], "x1 < x2"), ([-1, 0, 5, 5], "0 <= x1"), ([0, 0, 5], "at least 4")])
def test_bad_box(tmp_path, box, problem):
    write_reference(tmp_path / "ref.png", frame())
    with pytest.raises(ValueError, match=problem):
        screen_condition(tmp_path / "ref.png", box=box)


def test_min_identical_is_a_fraction(tmp_path):
    ref = write_reference(tmp_path / "ref.png", frame())
    for bad in (0, 1.5):
        with pytest.raises(ValueError, match="min_identical"):
            screen_condition(ref, min_identical=bad)


def test_needs_the_screen(tmp_path):
    cond = screen_condition(write_reference(tmp_path / "ref.png", frame()))
    with pytest.raises(ValueError, match="give the screen"):
        holds(cond, probe=None)


def test_box_outside_the_screen(tmp_path):
    big = Frame(np.zeros((100, 100, 4), np.uint8), 0.0)
    cond = screen_condition(write_reference(tmp_path / "ref.png", big, box=[60, 60, 90, 90]), box=[60, 60, 90, 90])
    with pytest.raises(ValueError, match=r"lies outside the 64x48 screen"):
        holds(cond, probe=None, after=frame())


def test_recording_may_load_before_the_reference_exists(tmp_path):
    from clinigym.run.references import _load
    scenario = _load(scenario_file(tmp_path, "references/new.png"))
    assert scenario.check[1].screen.path == tmp_path / "references" / "new.png"


def test_a_final_check_may_compare_the_screen(tmp_path):
    """Unlike `changed`, `screen` needs no action: it is allowed in `check:`."""
    write_reference(tmp_path / "references" / "flip.png", frame())
    assert load_scenario(scenario_file(tmp_path, "references/flip.png")).check[1].kind == "screen"


# The library's action tasks that have no final-state check: the oracle's final state equals
# the untouched start, so no check could fail at the start and pass at the end. (Information
# tasks, with `answer:`, are judged by the answer.)
NO_CHECK = {
    "dicomscope/medspot-01-flip",          # the second flip undoes the first
    "itksnap/medspot-01-check-updates",    # without network the check fails and leaves nothing
    "ginkgocadx/medspot-18-configure-grid",  # OK with the grid's defaults: nothing drawn or written
}


def test_library_scenarios_have_final_checks():
    """Loading the library also resolves every `screen` reference (a missing PNG is an error)."""
    from clinigym.spec.scenarios import all_scenarios
    scenarios = all_scenarios()
    assert {s.key for s in scenarios if not s.check and s.answer is None} == NO_CHECK
    for s in scenarios:
        for c in s.check:
            if c.screen:
                assert c.screen.path.parent.name == "references" and c.screen.path.suffix == ".png"
