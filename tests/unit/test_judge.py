"""PROTOCOL.md's hit rule, target sizes and failure taxonomy, with hand-computed cases
on a 1000 x 1000 image (so normalised coordinates are pixels / 1000); an action against
its step; the action budget."""
import pytest

from clinigym.core.actions import Action
from clinigym.core.geometry import Box
from clinigym.core.judge import (
    action_budget,
    budget_spent,
    failure_type,
    hit,
    hit_any,
    judge_action,
    target_size,
)

W = H = 1000


def test_hit_inclusive_edges():
    box = Box(100, 100, 200, 150)
    assert hit((100, 100), box) and hit((200, 150), box)
    assert not hit((99.9, 120), box) and not hit((150, 150.1), box)


def test_hit_tolerance_touching_counts():
    box = Box(100, 100, 200, 150)
    assert not hit((205, 120), box)
    assert hit((205, 120), box, delta=5)      # the square's edge touches x2
    assert not hit((205.1, 120), box, delta=5)
    assert hit((95, 95), box, delta=5)        # corner touches corner


def test_top_k():
    box = Box(100, 100, 200, 150)
    points = [(0, 0), (150, 120)]
    assert not hit_any(points, box, top_k=1)
    assert hit_any(points, box, top_k=2)


def test_from_percent_matches_protocol():
    b = Box.from_percent(10, 20, 5, 2.5, 1920, 1080)
    assert b.as_list() == pytest.approx([192, 216, 288, 243])


def test_target_size_thresholds():
    # area 4e-4 of 1e6 px = 400 px: exactly the medium lower bound
    assert target_size(Box(0, 0, 20, 19.99), W, H) == "small"
    assert target_size(Box(0, 0, 20, 20), W, H) == "medium"
    assert target_size(Box(0, 0, 50, 59.99), W, H) == "medium"
    assert target_size(Box(0, 0, 50, 60), W, H) == "large"


BIG = Box(400, 400, 500, 500)   # area 1e-2: not small; centre (450, 450); 1.5x box = 375..525


@pytest.mark.parametrize("point,box,expected", [
    (None, BIG, "no_prediction"),
    (None, Box(0, 0, 10, 10), "no_prediction"),          # rule 1 wins over small_target
    ((900, 900), Box(0, 0, 10, 10), "small_target"),     # small wins over edge_bias, far away too
    ((520, 450), BIG, "near_miss"),
    ((525, 525), BIG, "near_miss"),                      # the scaled box's corner is inside
    ((526, 450), BIG, "far_miss"),
    ((30, 600), Box(40, 580, 140, 620), "near_miss"),    # near_miss wins over edge_bias (x < 0.05)
    ((30, 450), BIG, "edge_bias"),                       # x = 0.03
    ((960, 450), BIG, "edge_bias"),                      # x = 0.96
    ((450, 40), BIG, "edge_bias"),                       # y = 0.04: edge band before toolbar band
    ((450, 960), BIG, "edge_bias"),
    ((450, 100), BIG, "toolbar_confusion"),              # y = 0.10
    ((450, 119), BIG, "toolbar_confusion"),
    ((450, 120), BIG, "far_miss"),                       # y = 0.12 is not < 0.12
    ((50, 450), BIG, "far_miss"),                        # x = 0.05 is not < 0.05
    ((200, 800), BIG, "far_miss"),
])
def test_failure_taxonomy(point, box, expected):
    assert failure_type(point, box, W, H) == expected



TARGET, END = Box(10, 10, 20, 20), Box(50, 50, 60, 60)


@pytest.mark.parametrize("action,point,expected,text,result", [
    (Action("click", (15, 15)), (15, 15), "click", None, (True, True)),
    (Action("double_click", (15, 15)), (15, 15), "click", None, (True, False)),     # the wrong type
    (Action("click", (21, 15)), (21, 15), "click", None, (False, True)),
    (Action("drag", (15, 15), (55, 60)), (15, 15), "drag", None, (True, True)),
    (Action("drag", (15, 15), (49, 55)), (15, 15), "drag", None, (False, True)),     # released beside the end
    (Action("drag", (15, 15)), (15, 15), "drag", None, (False, True)),               # no release point
    (Action("type", (15, 15), text="abc"), (15, 15), "type", "abc", (True, True)),
    (Action("type", (15, 15), text="ab"), (15, 15), "type", "abc", (True, False)),   # the text must be exact
    (Action("type", text="abc"), (12, 18), "type", "abc", (True, True)),             # the pointer's point
    (Action("click", (15, 15)), (30, 30), "click", None, (False, True)),             # the point given is judged
])
def test_an_action_against_its_step(action, point, expected, text, result):
    assert judge_action(action, point, expected, text, TARGET, END) == result


def test_a_drag_step_without_its_end_box_is_missed():
    assert judge_action(Action("drag", (15, 15), (55, 55)), (15, 15), "drag", None, TARGET, None) == (False, True)


def test_action_budget():
    assert action_budget(4, 3) == 12 and action_budget(4, 1) == 4     # recovery, and strict steps
    assert action_budget(4, 3, given=7) == 7 and action_budget(4, 3, given=0) == 12   # 0: the default
    with pytest.raises(ValueError, match="the action budget must be at least 1, not -2"):
        action_budget(4, 3, given=-2)
    assert not budget_spent(6, 7) and budget_spent(7, 7) and budget_spent(8, 7)
