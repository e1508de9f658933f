"""PROTOCOL.md's hit rule, target sizes and failure taxonomy, with hand-computed cases
on a 1000 x 1000 image (so normalised coordinates are pixels / 1000)."""
import pytest

from clinigym.core.geometry import Box
from clinigym.core.judge import failure_type, hit, hit_any, target_size

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

