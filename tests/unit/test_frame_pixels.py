"""A frame's pixels: RGB from the grabbed BGRA, and the uint32 view compared cheaply."""
import numpy as np

from clinigym.core.screen import Frame, changed_pixels


def test_rgb_is_the_bgra_reversed_without_alpha():
    bgra = np.array([[[1, 2, 3, 255], [10, 20, 30, 0]],
                     [[0, 0, 255, 7], [255, 128, 0, 9]]], np.uint8)
    rgb = Frame(bgra, 0.0).rgb
    assert rgb.tolist() == [[[3, 2, 1], [30, 20, 10]], [[255, 0, 0], [0, 128, 255]]]
    assert rgb.dtype == np.uint8 and rgb.flags.c_contiguous and rgb.flags.writeable


def test_rgb_is_a_copy():
    bgra = np.zeros((2, 3, 4), np.uint8)
    rgb = Frame(bgra, 0.0).rgb
    rgb[...] = 9
    assert not bgra.any()


def test_raw_counts_a_pixel_once_whatever_channels_differ():
    a = np.zeros((2, 2, 4), np.uint8)
    b = a.copy()
    b[0, 0, :3] = 5      # three channels of one pixel
    b[1, 1, 3] = 1       # alpha alone
    assert changed_pixels(Frame(a, 0).raw, Frame(b, 0).raw) == 2
