"""Per-environment actions as the batched structure of a vector environment."""
from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector.utils import batch_space, iterate

from clinigym.core.actions import Action, InvalidAction, parse
from clinigym.envs.spaces import action_space, batch_actions

ACTIONS = ["click(10.6, 20)", "type(5, 6, 'ab')", "key('alt+F4')", "done()", "drag(1, 2, 3, 4)",
           "scroll(3, 4, -2)", {"type": "answer", "text": "T2"}, Action("right_click", (7.0, 8.0))]


def test_fields_and_fillers():
    b = batch_actions(ACTIONS)
    assert b["type"].tolist() == [0, 5, 7, 9, 3, 6, 11, 2]
    assert b["point"].tolist() == [[11, 20], [5, 6], [0, 0], [0, 0], [1, 2], [3, 4], [0, 0], [7, 8]]
    assert b["end_point"].tolist() == [[0, 0]] * 4 + [[3, 4]] + [[0, 0]] * 3
    assert b["scroll"].tolist() == [[0, 0]] * 5 + [[0, -2]] + [[0, 0]] * 2
    assert b["text"] == ("", "ab", "", "", "", "", "T2", "")
    assert b["keys"] == ("", "", "alt+F4", "", "", "", "", "")


def test_the_batch_belongs_to_the_batched_space_and_splits_back():
    space = batch_space(action_space(100, 80), len(ACTIONS))
    b = batch_actions(ACTIONS)
    assert space.contains(b)
    back = [parse(a) for a in iterate(space, b)]
    assert [a.type for a in back] == ["click", "type", "key", "done", "drag", "scroll", "answer", "right_click"]
    assert back[0].point == (11.0, 20.0) and back[1].text == "ab" and back[2].keys == "alt+F4"
    assert back[4].end_point == (3.0, 4.0) and back[5].scroll == (0, -2) and back[6].text == "T2"


def test_errors_name_the_environment():
    with pytest.raises(InvalidAction, match="environment 1: unknown action type 'clik'"):
        batch_actions(["done()", "clik(1, 2)"])
    with pytest.raises(InvalidAction, match="environment 0: in the batched structure a type action clicks"):
        batch_actions(["type('no point')"])


def test_empty_batch():
    b = batch_actions([])
    assert b["type"].shape == (0,) and b["point"].shape == (0, 2) and b["text"] == ()
    assert b["point"].dtype == np.int64
