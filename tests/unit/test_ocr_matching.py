"""The OCR grounding agent: its matching logic on synthetic word lists (no OCR), its
icon matching on the real icon crops, and the agent on the real programs (live):
what it solves, what it records, and that it runs with no network at all."""
from __future__ import annotations

import json

import numpy as np
import pytest

from clinigym.agents.ocr import (
    CONTENT_THRESHOLD,
    IconLibrary,
    OcrAgent,
    TextBox,
    ground,
    icon_folders,
    match_label,
    parse_instruction,
    similarity,
)
from clinigym.core import actions as act
from conftest import REPO

ROOT = REPO


def tb(text, x1, y1, x2, y2, score=1.0):
    return TextBox(text, (x1, y1, x2, y2), score)


def decide(instruction, boxes):
    return ground(parse_instruction(instruction), boxes)


def inside(point, box):
    return point is not None and box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3]


# -- the instruction -----------------------------------------------------------------------
@pytest.mark.parametrize("instruction, action", [
    ("Double click the first CT image to display it in the viewer.", "double_click"),
    ("Double-click the series.", "double_click"),
    ("double click on 'Axial 3mm'", "double_click"),
    ("Right-click the study 'CT CHEST PHANTOM'.", "right_click"),
    ("Right click the image.", "right_click"),
    ("Hover over the 'Jobs' link.", "hover"),
    ("Click on 'Delete this study'.", "click"),
    ("Open the patient PHANTOM^ALICE.", "click"),
    ("Type the file name 'mr-brain/IMG0003.dcm'.", "type"),
])
def test_action_type_from_instruction(instruction, action):
    assert parse_instruction(instruction).action == action


def test_type_takes_the_quoted_text_and_no_point():
    intent = parse_instruction("Type the file name 'mr-brain/IMG0003.dcm'.")
    assert intent.text == "mr-brain/IMG0003.dcm"
    decision = ground(intent, [tb("Location:", 578, 314, 651, 335)])
    assert decision.action == "type" and decision.point is None and decision.text == "mr-brain/IMG0003.dcm"
    # "Enter" without quoted text is not a type action.
    assert parse_instruction("Enter the study list.").action == "click"


def test_quotes_context_purpose_and_stop_words():
    intent = parse_instruction("Select a study from the 'Browser' menu (patient PHANTOM^ALICE, CT CHEST).")
    assert intent.labels == [] and intent.context == ["Browser"]
    assert intent.words == ["study", "patient", "phantom^alice", "ct", "chest"]
    intent = parse_instruction("Click on 'All patients' to list the patients.")
    assert intent.labels == ["All patients"] and "list" not in intent.words
    intent = parse_instruction("Switch the patient from 'Unprotected' to 'Protected'.")
    assert intent.labels == ["Unprotected", "Protected"]
    intent = parse_instruction("Choose \u2018Open\u2019 from the \u201cFile\u201d menu.")
    assert intent.labels == ["Open"] and intent.context == ["File"]
    assert parse_instruction("Invert the colors by clicking the invert widget from the processing tools"
                             ).words == ["invert", "colors"]
    assert parse_instruction("Click the patient's study.").labels == []     # an apostrophe is no quote


# -- text matching -------------------------------------------------------------------------
def test_quoted_label_wins_over_content_words():
    boxes = [tb("Study", 20, 200, 80, 220), tb("Delete this patient", 20, 300, 200, 320),
             tb("Delete this study", 20, 400, 190, 420), tb("Study: delete", 600, 100, 700, 120)]
    d = decide("Click on 'Delete this study' to remove the study.", boxes)
    assert d.source == "ocr" and d.tier == "label" and d.matched == "Delete this study"
    assert inside(d.point, (20, 400, 190, 420))
    # Orthanc's study page: the quoted study name, not the words around it.
    boxes = [tb("MR BRAIN PHANTOM", 600, 150, 790, 175), tb("CT CHEST PHANTOM", 600, 300, 820, 325),
             tb("Study", 20, 220, 80, 240)]
    assert inside(decide("Open the study 'CT CHEST PHANTOM'.", boxes).point, (600, 300, 820, 325))


def test_rare_word_beats_common_word():
    boxes = [tb("Export", 10, 10, 80, 30), tb("Export", 10, 50, 80, 70), tb("Export", 10, 90, 80, 110),
             tb("Report", 300, 10, 370, 30)]
    d = decide("Click the export report", boxes)
    assert d.matched == "Report" and inside(d.point, (300, 10, 370, 30))
    # Generic words (patient, image, study) count less than a name.
    boxes = [tb("Patient", 20, 80, 90, 100), tb("PatientID: CG0001", 20, 140, 150, 160),
             tb("PHANTOM^ALICE", 20, 110, 190, 130), tb("PHANTOM^BOB", 20, 220, 180, 240)]
    d = decide("Open the patient PHANTOM^ALICE.", boxes)
    assert d.matched == "PHANTOM^ALICE"


def test_short_labels_match_exactly():
    boxes = [tb("Lookup", 10, 10, 90, 30), tb("Ok?", 200, 10, 230, 30), tb("OK", 947, 521, 989, 552),
             tb("Book", 10, 100, 60, 120)]
    d = decide("Confirm the deletion with 'OK'.", boxes)
    assert inside(d.point, (947, 521, 989, 552))
    assert decide("Click OK to confirm the anonymization.", boxes).matched == "OK"
    # 'OR' is not 'OK': no fuzzy match for one- and two-letter labels.
    d = decide("Click 'OK'.", [tb("OR", 10, 10, 40, 30), tb("0K", 100, 10, 130, 30)])
    assert d.point is None and d.source == "none"


def test_no_match_gives_no_point():
    boxes = [tb("Lookup", 10, 10, 90, 30), tb("Upload", 1600, 10, 1670, 30), tb("Jobs", 1850, 10, 1890, 30)]
    for instruction in ("Click on 'Preferences'.", "Page to the next four slices with the scrollbar."):
        d = decide(instruction, boxes)
        assert d.point is None and d.source == "none"
    assert decide("Click on 'Preferences'.", []).point is None


def test_ocr_confusions_and_partial_boxes():
    # GTK mnemonics: OCR reads the underlined F as E and the O as Q.
    menu = [tb("Eile Edit View Help", 4, 18, 171, 44)]
    d = decide("Open the 'File' menu.", menu)
    assert inside(d.point, (3, 21, 41, 44))           # the left part of the box, not its centre
    dialog = [tb("Open DICOM Image files", 881, 236, 1038, 253), tb("XCancel", 971, 795, 1051, 826),
              tb("Qpen", 1197, 799, 1264, 824)]
    assert decide("Click the 'Open' button.", dialog).matched == "Qpen"   # whole button over part of a title
    # A label that is part of a box: the point is on its words.
    row = [tb("NEWI Series CT * Axial 5mm", 45, 139, 232, 157)]
    d = decide("Open the 'Series CT' entry of the study.", row)
    assert inside(d.point, (64, 140, 150, 155))
    # A label split over two boxes of one line.
    split = [tb("Delete this", 20, 400, 120, 420), tb("study", 126, 400, 180, 420),
             tb("Delete this patient", 20, 300, 200, 320)]
    d = decide("Click on 'Delete this study'.", split)
    assert inside(d.point, (20, 400, 180, 420))
    # Spacing differences ('Min - Max').
    assert decide("Select the 'Min-Max' preset", [tb("Min - Max", 1717, 431, 1787, 454)]).matched == "Min - Max"
    assert similarity("file", "eile") >= 0.9 and similarity("open", "qpen") >= 0.9
    assert similarity("phantom^bob", "phantom^alice") < 0.8


def test_confirm_means_ok_or_yes_and_ordinals():
    boxes = [tb("Delete Objects", 907, 480, 1006, 497), tb("Are you sure?", 879, 518, 969, 535),
             tb("Yes", 914, 553, 947, 576), tb("No", 967, 553, 996, 577)]
    d = decide("Confirm the deletion of the selected study", boxes)
    assert d.matched == "Yes" and inside(d.point, (909, 552, 952, 576))
    rows = [tb("NEW! CT", 83, 171 + 16 * i, 134, 189 + 16 * i) for i in range(1, 8)]
    rows.insert(3, tb("NEW! CT", 82, 155, 134, 173))
    rows.append(tb("NEWI Series CT * Axial 5mm", 60, 139, 234, 156))
    d = decide("Double click the first CT image to display it in the viewer.", rows + [tb("Viewer", 75, 53, 129, 69)])
    assert d.action == "double_click" and inside(d.point, (84, 156, 150, 171))
    assert d.score >= CONTENT_THRESHOLD
    d = decide("Double click the last CT image.", rows)
    assert d.point[1] > 270


def test_low_confidence_ocr_is_ignored():
    assert match_label("Delete", [tb("Delete", 10, 10, 60, 30, score=0.3)]) == []


# -- icons ----------------------------------------------------------------------------------
def test_icon_crops_are_fixtures_with_labels():
    import yaml
    for app, required in {"dicomscope": {"delete", "rotate", "invert", "presets", "flip"},
                          "aeskulap": {"invert", "layout-arrow", "preset-list"}}.items():
        folder = icon_folders(app)[0]
        lib = IconLibrary([folder])
        assert required <= {i.name for i in lib.icons}
        meta = yaml.safe_load((folder / "icons.yaml").read_text())
        assert set(meta) == {p.stem for p in folder.glob("*.png")}
        for icon in lib.icons:
            assert icon.image.ndim == 3 and 10 <= icon.image.shape[0] <= 64


def test_icon_fallback_finds_the_crop_and_only_the_crop():
    import cv2
    lib = IconLibrary(icon_folders("dicomscope"))
    delete = next(i for i in lib.icons if i.name == "delete")
    screen = np.full((1080, 1920, 3), 238, np.uint8)
    rgb = cv2.cvtColor(delete.image, cv2.COLOR_BGR2RGB)
    h, w = rgb.shape[:2]
    screen[21:21 + h, 147:147 + w] = rgb
    agent = OcrAgent(icons=icon_folders("dicomscope"), ocr=lambda img: [tb("Browser", 11, 55, 65, 68)])
    action = agent.act({"screenshot": screen, "instruction": "Click on the 'Delete' Icon from the toolbar"}, {})
    assert action.type == "click" and inside(action.point, (147, 21, 171, 45))
    assert action.meta["source"] == "icon" and action.meta["matched"] == "delete"
    assert action.meta["score"] >= 0.9
    # The same instruction on a screen without the icon: no point, not a guess.
    blank = np.full((1080, 1920, 3), 238, np.uint8)
    action = agent.act({"screenshot": blank, "instruction": "Click on the 'Delete' Icon from the toolbar"}, {})
    assert action.point is None and action.meta["source"] == "none"
    # A scaled observation: the crop is scaled with it.
    half = cv2.resize(screen, (960, 540), interpolation=cv2.INTER_AREA)
    action = agent.act({"screenshot": half, "instruction": "Click on the 'Delete' Icon"},
                       {"coordinates": {"scale": [2.0, 2.0]}})
    assert inside(action.point, (73, 10, 86, 23))


def test_icon_names_come_from_the_instruction_words():
    lib = IconLibrary(icon_folders("aeskulap"))

    def named(text):
        return {i.name for i, _ in lib.named(parse_instruction(text).words)}

    assert named("Invert the image with the invert button.") == {"invert"}
    assert named("Open the layout menu with the arrow next to the layout button.") == {"layout-arrow"}
    assert named("Open the window-level preset list.") == {"preset-list"}
    assert named("Open the 'File' menu.") == set()


# -- the agent ------------------------------------------------------------------------------
def test_agent_caches_ocr_per_screenshot_and_records_meta():
    calls = []

    def fake_ocr(img):
        calls.append(img.shape)
        return [tb("All patients", 272, 593, 383, 615), tb("All studies", 901, 591, 1002, 615)]

    agent = OcrAgent(ocr=fake_ocr, cache_size=2)
    screen = np.zeros((1080, 1920, 3), np.uint8)
    obs = {"screenshot": screen, "instruction": "Click on 'All patients'."}
    first = agent.act(obs, {})
    second = agent.act(obs, {})
    assert len(calls) == 1 and first.point == second.point
    assert inside(first.point, (272, 593, 383, 615))
    meta = first.meta
    assert meta["source"] == "ocr" and meta["matched"] == "All patients" and meta["score"] == 1.0
    assert meta["n_words"] == 2 and meta["ocr_cached"] is False and second.meta["ocr_cached"] is True
    assert meta["ocr_time"] >= 0 and meta["time"] >= meta["ocr_time"]
    json.dumps(meta)                                      # recorded with the step
    for i in range(3):                                    # a small LRU: old screens fall out
        agent.act({"screenshot": np.full((1080, 1920, 3), i + 1, np.uint8), "instruction": "x"}, {})
    agent.act(obs, {})
    assert len(calls) == 5


def test_no_point_is_an_invalid_action_for_the_environment():
    agent = OcrAgent(ocr=lambda img: [])
    action = agent.act({"screenshot": np.zeros((1080, 1920, 3), np.uint8),
                        "instruction": "Click on 'Anonymize'."}, {})
    assert action.type == "click" and action.point is None
    with pytest.raises(act.InvalidAction):
        act.validate(action, 1920, 1080)


# -- live: the real programs ------------------------------------------------------------------
# What the OCR agent achieves on each scenario (steps correct, the failure of the step that
# ended it, the source of each step's point). Asserted exactly, so that a regression fails;
# `make test` runs these, `make test-all` also the rest of the library (no exact outcome).


