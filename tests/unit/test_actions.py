import numpy as np
import pytest

from clinigym.core.actions import Action, InvalidAction, parse, validate


@pytest.mark.parametrize("text,expected", [
    ("click(812, 44)", Action("click", (812.0, 44.0))),
    (" double_click( 1.5 ,2 ) ", Action("double_click", (1.5, 2.0))),
    ("right_click(3, 4)", Action("right_click", (3.0, 4.0))),
    ("drag(1, 2, 30, 40)", Action("drag", (1.0, 2.0), (30.0, 40.0))),
    ("type('hello world')", Action("type", None, None, "hello world")),
    ("type(5, 6, \"x\")", Action("type", (5.0, 6.0), None, "x")),
    ("scroll(10, 20, 3)", Action("scroll", (10.0, 20.0), scroll=(0, 3))),
    ("key('ctrl+c')", Action("key", keys="ctrl+c")),
])
def test_string_forms(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize("bad", ["click(1)", "clack(1, 2)", "click(1, 2", "drag(1, 2, 3)", "", 42])
def test_unparsable(bad):
    with pytest.raises(InvalidAction):
        parse(bad)


def test_dict_and_space_sample_forms():
    assert parse({"type": "click", "x": 3, "y": 4}) == Action("click", (3.0, 4.0))
    sample = {"type": 0, "point": np.array([5, 6]), "end_point": np.array([0, 0]),
              "text": "", "keys": "", "scroll": np.array([0, 0])}
    assert parse(sample).type == "click" and parse(sample).point == (5.0, 6.0)
    with pytest.raises(InvalidAction):
        parse({"type": 99})


def test_out_of_image_is_invalid_never_clamped():
    validate(Action("click", (1919, 1079)), 1920, 1080)
    for p in [(1920, 5), (5, 1080), (-1, 5)]:
        with pytest.raises(InvalidAction, match="outside"):
            validate(Action("click", p), 1920, 1080)
    with pytest.raises(InvalidAction):
        validate(Action("click"), 1920, 1080)
    with pytest.raises(InvalidAction):
        validate(Action("type", (1, 1)), 1920, 1080)


def test_the_plan_and_goal_endings_and_wait():
    assert parse("done()") == Action("done") and parse("wait()") == Action("wait")
    assert parse("fail('too risky')") == Action("fail", text="too risky") and parse("fail()") == Action("fail")
    assert parse("answer('CG0002')") == Action("answer", text="CG0002")
    with pytest.raises(InvalidAction, match="answer needs text"):
        validate(parse("answer()"), 10, 10)
    with pytest.raises(InvalidAction, match="done takes no arguments"):
        parse("done(1, 2)")


def test_an_action_of_an_unknown_type_is_invalid_not_a_crash():
    with pytest.raises(InvalidAction, match="unknown action type 'triple_click'"):
        validate(Action("triple_click", (1.0, 1.0)), 10, 10)


def test_a_refused_dict_keeps_what_the_agent_asked_to_record():
    from clinigym.envs.base import parse_action
    parsed, why, meta = parse_action({"type": "triple_click", "meta": {"raw": "triple_click(1, 2)"}}, 10, 10)
    assert parsed is None and why.startswith("unknown action type 'triple_click'")
    assert meta == {"raw": "triple_click(1, 2)"}
