from clinigym.agents.intent import action_type, quoted, typed_text


def test_quotes_not_apostrophes():
    assert quoted("Open the patient's 'Study' tab, then \"OK\"") == ["Study", "OK"]
    assert quoted("Click ‘Delete’ and “Yes”") == ["Delete", "Yes"]


def test_action_types():
    assert action_type("Double click the first CT image") == "double_click"
    assert action_type("double-click it") == "double_click"
    assert action_type("Right click on the drawing") == "right_click"
    assert action_type("Hover over the icon") == "hover"
    assert action_type("Type the file name 'mr-brain/IMG0003.dcm'.") == "type"
    assert action_type("Click the 'Enter' key label") == "click"      # no quoted text after the verb
    assert action_type("Click on 'Delete this study'.") == "click"


def test_typed_text_follows_the_verb():
    assert typed_text("In the 'Name' field, type 'Alice'") == "Alice"
    assert typed_text("Click 'OK'") is None
