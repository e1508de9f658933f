"""The damaged-area arithmetic the damage settle rule grabs by (exact values)."""
from clinigym.runtime.damage import Area


def test_union_covers_both_and_none_is_neutral():
    a, b = Area(10, 20, 30, 40), Area(25, 5, 50, 35)
    assert a.union(b) == Area(10, 5, 50, 40)
    assert a.union(None) == a


def test_clip_to_the_screen_and_off_screen_is_nothing():
    assert Area(-5, -10, 30, 40).clip(20, 25) == Area(0, 0, 20, 25)
    assert Area(1920, 0, 1930, 10).clip(1920, 1080) is None
    assert Area(5, 5, 5, 9).clip(100, 100) is None
