"""`ready.painted`: the first screen is settled only once its box shows something drawn."""
import numpy as np

from clinigym.runtime.backends.settling import plain


def region(fill, h=38, w=300):
    return np.full((h, w, 3), fill, dtype=np.uint8)


def test_a_black_window_and_an_empty_pane_are_plain():
    assert plain(region(0))
    # GNU Health's menu pane before the menu arrives: the window's grey, brighter than 200,
    # which the old rule (a pixel brighter than 200) took for drawn.
    assert plain(region((246, 245, 244)))


def test_one_drawn_pixel_is_not_plain():
    pane = region(255)
    pane[20, 40] = (46, 52, 54)          # a pixel of a row's text
    assert not plain(pane)
    bar = region((239, 235, 231), h=10, w=400)
    bar[5, 399, 2] = 230                 # the last column, one channel
    assert not plain(bar)
