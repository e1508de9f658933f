"""Observation modes and set-of-marks, on a hand-made tree: which elements get marks, their
numbers and boxes, the drawn image, the fields and spaces of each mode."""
from __future__ import annotations

import json

import numpy as np
import pytest

from clinigym.agents.registry import AGENTS, check_agent
from clinigym.core.elements import Raw, assemble
from clinigym.core.errors import AgentError, DataError
from clinigym.core.geometry import Box
from clinigym.core.marks import Mark, draw_marks, marks_from_json, marks_of, marks_text, marks_to_json
from clinigym.core.recording_schema import EpisodeHeader, EpisodeOutcome, StepRecord
from clinigym.envs.observations import OBS_MODES, obs_mode
from clinigym.envs.spaces import observation_space
from clinigym.eval.scoring import format_table, score_dirs
from clinigym.recording.writer import new_episode, numbered

SCREEN = np.zeros((4, 6, 3), np.uint8)
TREE = assemble([
    Raw("w", None, "frame", "Viewer", box=Box(0, 0, 200, 100)),
    Raw("bar", "w", "tool bar", box=Box(0, 0, 200, 20)),
    Raw("b1", "bar", "push button", "", description="Flip", box=Box(10, 2, 30, 18)),
    Raw("lbl", "bar", "label", "Zoom", box=Box(40, 2, 70, 18)),
    Raw("t", "w", "text", "", states=frozenset({"editable", "focused"}), box=Box(10, 30, 110, 50)),
    Raw("canvas", "w", "drawing area", "", states=frozenset({"focusable"}), box=Box(0, 60, 200, 100)),
    Raw("zero", "w", "push button", "Hidden", box=Box(5, 5, 5, 5)),
    Raw("pane", "w", "panel", "", states=frozenset({"focusable"}), box=Box(120, 20, 200, 60)),
    # a closed drop-down as Qt gives it: the list without a box, its items at the corner
    Raw("combo", "w", "combo box", "Label 1", box=Box(120, 70, 180, 90)),
    Raw("closed", "combo", "list", ""),
    Raw("item", "closed", "list item", "Label 2", states=frozenset({"focusable"}), box=Box(0, 0, 100, 20)),
])


def test_marks_are_the_interactive_elements_in_walk_order():
    assert marks_of(TREE) == [
        Mark(1, "push button", "Flip", Box(10, 2, 30, 18)),
        Mark(2, "text", "", Box(10, 30, 110, 50)),
        Mark(3, "drawing area", "", Box(0, 60, 200, 100)),   # focusable: a canvas one clicks in
        Mark(4, "combo box", "Label 1", Box(120, 70, 180, 90)),
    ]   # not the focusable panel (it only holds others), nor the closed list's item


def test_marks_round_trip_and_text():
    marks = marks_of(TREE)
    assert marks_from_json(marks_to_json(marks)) == marks
    assert json.loads(marks_to_json(marks))[0] == {"mark": 1, "role": "push button", "name": "Flip",
                                                   "box": [10, 2, 30, 18]}
    assert marks_text(marks) == ('[1] push button "Flip" (10,2,30,18)\n[2] text "" (10,30,110,50)\n'
                                 '[3] drawing area "" (0,60,200,100)\n[4] combo box "Label 1" (120,70,180,90)')


def test_drawn_marks_outline_the_box_and_leave_the_rest():
    rgb = np.zeros((100, 200, 3), np.uint8)
    drawn = draw_marks(rgb, [Mark(7, "push button", "Flip", Box(100, 40, 150, 80))])
    assert rgb.max() == 0                               # the original is untouched
    colour = (255, 0, 110)
    assert tuple(drawn[79, 120]) == colour              # the bottom edge of the box
    assert tuple(drawn[60, 149]) == colour              # its right edge
    assert tuple(drawn[70, 125]) == (0, 0, 0)           # inside, away from the label: as it was
    assert tuple(drawn[10, 10]) == (0, 0, 0)            # outside
    white = np.argwhere((drawn == 255).all(axis=-1))    # the number's pixels, inside its label
    assert white.min(axis=0).tolist() >= [42, 102] and white.max(axis=0).tolist() <= [58, 112]
    assert (drawn[40, 100:110] == colour).all()          # the label's top row, filled


def test_a_label_at_the_image_edge_stays_inside():
    drawn = draw_marks(np.zeros((50, 50, 3), np.uint8), [Mark(12, "button", "", Box(45, 45, 60, 60))])
    assert drawn.shape == (50, 50, 3) and (drawn[49, 35:50] == (255, 0, 110)).all(axis=-1).any()


def test_each_mode_gives_its_fields():
    rgb = np.full((100, 200, 3), 9, np.uint8)
    assert set(obs_mode("screenshot").fields(rgb, None)) == {"screenshot"}
    a11y = obs_mode("a11y").fields(rgb, TREE)
    assert set(a11y) == {"a11y", "a11y_json"} and a11y["a11y"] == TREE.to_text()
    assert json.loads(a11y["a11y_json"]) == TREE.as_dict()
    assert set(obs_mode("screenshot+a11y").fields(rgb, TREE)) == {"screenshot", "a11y", "a11y_json"}
    som = obs_mode("som").fields(rgb, TREE)
    assert set(som) == {"screenshot", "marks"} and marks_from_json(som["marks"]) == marks_of(TREE)
    assert (som["screenshot"] != rgb).any() and som["screenshot"].shape == rgb.shape
    with pytest.raises(ValueError, match="needs the program's tree"):
        obs_mode("som").fields(rgb, None)
    with pytest.raises(ValueError, match="unknown observation mode 'tree'; known: screenshot, a11y, "
                                         "screenshot\\+a11y, som"):
        obs_mode("tree")


@pytest.mark.parametrize("name", list(OBS_MODES))
def test_the_space_holds_what_the_mode_gives(name):
    rgb = np.zeros((100, 200, 3), np.uint8)
    space = observation_space(200, 100, 3, ["Flip it"], OBS_MODES[name])
    obs = {**OBS_MODES[name].fields(rgb, TREE if OBS_MODES[name].reads_tree else None),
           "instruction": "Flip it", "step": 0}
    assert set(space.spaces) == set(obs) and space.contains(obs)
    if OBS_MODES[name].tree:   # any character a program names things with (U+200B is removed earlier)
        assert space["a11y"].contains("Überweisung \u00e9 \u4e2d") and not space["a11y"].contains(3)


def test_agents_that_read_the_screenshot_are_refused_without_one():
    with pytest.raises(AgentError, match="the ocr agent reads the screenshot: run it with an observation mode "
                                         "that gives one \\(screenshot, screenshot\\+a11y, som\\), not 'a11y'"):
        check_agent("ocr", {}, "a11y")
    assert check_agent("random", {}, "a11y") is AGENTS["random"]
    assert check_agent("oracle", {}, "som") is AGENTS["oracle"]


def _episode(out, number: int, observation: str) -> None:
    with numbered(number):
        rec = new_episode(out, f"orthanc-s{number}", EpisodeHeader(
            scenario=f"orthanc/s{number}", app="orthanc", overview="", n_steps=1, coordinates={},
            observation=observation))
    rec.step(StepRecord(step=0, instruction="", expected_action="click", raw_action=None, action=None,
                        correct=True), SCREEN, SCREEN)
    rec.finish(EpisodeOutcome("complete", 1, 1))


def test_scores_of_each_observation_mode_stay_apart(tmp_path):
    _episode(tmp_path / "som", 1, "som")
    _episode(tmp_path / "som", 2, "som")
    summary, _ = score_dirs([tmp_path / "som"])
    assert summary["observation"] == "som" and summary["tca"] == 1.0
    assert format_table(summary, "agent: oracle").splitlines()[:2] == ["agent: oracle", "observation: som"]
    _episode(tmp_path / "plain", 1, "screenshot")
    plain, _ = score_dirs([tmp_path / "plain"])
    assert "observation" not in plain and not format_table(plain).startswith("observation")
    with pytest.raises(DataError, match=r"these episodes observed in different modes \(screenshot: 1, som: 2\); "
                                        "score each mode's episodes apart"):
        score_dirs([tmp_path / "som", tmp_path / "plain"])
