"""`clinigym collect`, `collect --review` and `agreement`.

Live tests drive the collection page in a real headless Chromium (Debian's, through
Playwright) against the real programs on a real Xvfb: a DICOMscope task and an Orthanc
Explorer task are clicked through on the page, proposed boxes accepted or adjusted,
instructions written, the task ended; the written scenario replays with the oracle at
TCA 100% and the exported MedSPOT-format dataset validates against the live programs at
full fidelity. Proposed boxes are compared with the true element boxes (Orthanc: the DOM
boxes of the existing scenario's targets; DICOMscope: the existing scenario's boxes).
Unit tests: agreement numbers, quality flags, action parsing, pixel proposals.

Set CLINIGYM_COLLECT_SCREENSHOT=docs/collect.png to keep a screenshot of the page.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import yaml
from collectpage import TIMEOUT, H, Page, W, api, browser_fixture  # noqa: F401 - the `browser` fixture

from clinigym.cli.main import build_parser
from clinigym.collect import agreement, proposals, quality
from clinigym.collect.boxes import iou
from clinigym.collect.review import ReviewSession
from clinigym.collect.server import CollectServer
from clinigym.collect.session import ActionError, CollectSession, parse_action
from clinigym.spec.medspot import GroundTruth, MedspotStep, MedspotTask, read_file, write_dataset
from clinigym.spec.scenarios import select

SCREENSHOT_ENV = "CLINIGYM_COLLECT_SCREENSHOT"
# -- agreement (hand-made annotation pairs, exact numbers) -------------------------------------
def _annotation(path: Path, boxes: list[list[list[float] | None]], overview: str = "task") -> Path:
    tasks = []
    for i, steps in enumerate(boxes):
        made = tuple(MedspotStep(j + 1, f"Images/x/{i}-{j}.png", f"step {j + 1}",
                                 (GroundTruth("click", "t", tuple(b)),) if b is not None else ())
                     for j, b in enumerate(steps))
        tasks.append(MedspotTask("Test", i, f"{overview} {i}", made))
    written = write_dataset(tasks, path)[0]
    return written


def test_iou_exact():
    assert iou([0, 0, 10, 10], [0, 0, 10, 10]) == 1.0
    assert iou([0, 0, 10, 10], [5, 0, 15, 10]) == pytest.approx(50 / 150)
    assert iou([0, 0, 10, 10], [10, 0, 20, 10]) == 0.0
    assert iou([0, 0, 10, 10], [2, 2, 4, 4]) == pytest.approx(4 / 100)
    assert agreement.iou_xywh([10, 10, 20, 20], [15, 10, 20, 20]) == pytest.approx(300 / 500)


def test_agreement_numbers(tmp_path):
    a = _annotation(tmp_path / "a", [[[10, 10, 20, 20], [0, 0, 10, 10], [50, 50, 5, 5]],
                                     [[1, 1, 2, 2], None]])
    b = _annotation(tmp_path / "b", [[[15, 10, 20, 20], [0, 0, 10, 10], [70, 70, 5, 5]],
                                     [[1, 1, 2, 1], [3, 3, 1, 1]]])
    result = agreement.compare(a, b)
    ious = [round(s.iou, 6) for s in result.steps]
    assert ious == [0.6, 1.0, 0.0, 0.5]
    assert [s.agree for s in result.steps] == [True, True, False, True]
    assert result.mean_iou == pytest.approx((0.6 + 1.0 + 0.0 + 0.5) / 4)
    assert result.agreement_rate == pytest.approx(3 / 4)
    assert result.unmatched == [f"task 1 step 2: no action in {a}"]
    data = result.to_json()
    assert data["n_steps"] == 4 and data["mean_iou"] == pytest.approx(0.525) and data["agreement_rate"] == 0.75
    strict = agreement.compare(a, b, threshold=0.6)
    assert strict.agreement_rate == pytest.approx(2 / 4)
    print("agreement:", ious, "mean IoU", result.mean_iou, "rate", result.agreement_rate)


def test_agreement_unmatched_tasks_and_steps(tmp_path):
    a = _annotation(tmp_path / "a", [[[0, 0, 10, 10], [0, 0, 10, 10]], [[0, 0, 1, 1]]])
    b = _annotation(tmp_path / "b", [[[0, 0, 10, 10]]])
    result = agreement.compare(a, b)
    assert [s.iou for s in result.steps] == [1.0]
    assert result.unmatched == [f"{a} has 2 tasks, {b} has 1", f"task 0 step 2: only in {a}", f"task 1: only in {a}"]


def test_agreement_command(tmp_path, capsys):
    a = _annotation(tmp_path / "a", [[[10, 10, 20, 20]]])
    b = _annotation(tmp_path / "b", [[[15, 10, 20, 20]]])
    parser = build_parser()
    args = parser.parse_args(["agreement", str(a), str(b), "--json"])
    assert args.func(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mean_iou"] == pytest.approx(0.6) and data["agreement_rate"] == 1.0
    args = parser.parse_args(["agreement", str(a), str(b)])
    assert args.func(args) == 0
    table = capsys.readouterr().out
    assert "   0    1  0.600  yes" in table and "mean IoU: 0.600" in table and "(IoU >= 0.5): 100.0%" in table
    args = parser.parse_args(["agreement", str(a), str(tmp_path / "missing.json")])
    assert args.func(args) == 2 and "error:" in capsys.readouterr().err


def test_cli_has_the_commands():
    parser = build_parser()
    for argv in (["collect", "--help"], ["agreement", "--help"]):
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args(argv)
        assert exit_.value.code == 0


# -- quality flags and action parsing ---------------------------------------------------------
def test_quality_flags_each_fire_alone():
    click = {"type": "click", "point": [100, 100]}
    good = quality.step_flags(click, [90, 90, 120, 110], "Click on 'OK'.", 500, 40, W, H)
    assert good == []
    assert quality.step_flags(click, [200, 200, 220, 220], "x", 500, 40, W, H) == ["click_outside_box"]
    assert quality.step_flags(click, [0, 0, 1920, 1080], "x", 500, 40, W, H) == ["box_too_large"]
    assert quality.step_flags(click, [90, 90, 120, 110], "  ", 500, 40, W, H) == ["empty_instruction"]
    assert quality.step_flags(click, [90, 90, 120, 110], "x", 40, 40, W, H) == ["no_screen_change"]
    # 25% exactly is not "more than 25%"
    assert quality.step_flags(click, [0, 0, 960, 540], "x", 500, 40, W, H) == []
    drag = {"type": "drag", "point": [100, 100], "end_point": [500, 500]}
    assert quality.step_flags(drag, [90, 90, 120, 110], "x", 500, 40, W, H, [490, 490, 510, 510]) == []
    assert quality.step_flags(drag, [90, 90, 120, 110], "x", 500, 40, W, H, [0, 0, 10, 10]) == ["click_outside_box"]


@pytest.mark.parametrize("data, reason", [
    ({"type": "clack", "x": 1, "y": 1}, "unknown action type 'clack'"),
    ({"type": "click"}, "click needs a point"),
    ({"type": "click", "x": 1920, "y": 5}, "outside the 1920x1080 screen"),
    ({"type": "click", "x": "a", "y": 5}, "point must be two numbers"),
    ({"type": "drag", "x": 1, "y": 1}, "drag needs an end point"),
    ({"type": "type", "text": ""}, "type needs non-empty text"),
    ({"type": "key"}, "key needs keys"),
    ({"type": "scroll", "x": 1, "y": 1, "dy": 0}, "scroll needs dx or dy"),
    ([1, 2], "an action is a JSON object"),
])
def test_malformed_actions_are_refused_with_the_reason(data, reason):
    with pytest.raises(ActionError, match=reason):
        parse_action(data, W, H)


def test_actions_parse():
    assert parse_action({"type": "click", "x": 10.4, "y": 20.6}, W, H) == {"type": "click", "point": [10, 21]}
    assert parse_action({"type": "drag", "x": 1, "y": 2, "x2": 30, "y2": 40}, W, H) == \
        {"type": "drag", "point": [1, 2], "end_point": [30, 40]}
    assert parse_action({"type": "scroll", "x": 1, "y": 2, "dy": 3}, W, H) == \
        {"type": "scroll", "point": [1, 2], "scroll": [0, 3]}
    assert parse_action({"type": "type", "text": "abc\n"}, W, H) == {"type": "type", "text": "abc\n"}


# -- pixel proposals on synthetic screens -----------------------------------------------------
def _screen() -> np.ndarray:
    img = np.full((200, 300, 3), 238, np.uint8)
    img[50:70, 40:120] = (120, 120, 120)      # a button's 2 px border ...
    img[52:68, 42:118] = (225, 228, 235)      # ... and its face
    return img


def test_press_feedback_snaps_to_the_border():
    before = _screen()
    pressed = before.copy()
    pressed[52:68, 42:118] = (180, 190, 205)   # the pressed face
    pressed[58:61, 60:80] = (0, 0, 0)          # its label
    assert proposals.feedback_box(before, pressed, (70, 60)) == [42, 52, 117, 67]
    assert proposals.feedback_box(before, pressed, (70, 60), snap_frame=before) == [40, 50, 119, 69]
    assert proposals.feedback_box(before, pressed, (200, 150)) is None      # not at the point


def test_press_feedback_does_not_snap_to_a_line_running_past_the_button():
    # A button whose pressed look recolours its whole border, under a title bar's edge
    # (DICOMscope's toolbar): that edge runs on past both corners, so it is not the border.
    before = _screen()
    before[45:48] = (78, 118, 168)
    before[48] = (254, 254, 254)
    pressed = before.copy()
    pressed[50:70, 40:120] = (184, 207, 229)
    assert proposals.feedback_box(before, pressed, (70, 60), snap_frame=before) == [40, 50, 119, 69]


def test_highlight_box_ignores_other_changes():
    before = _screen()
    after = before.copy()
    after[100:116, 20:220] = (184, 207, 229)   # a selected row ...
    after[104:112, 30:200:3] = (0, 0, 0)       # ... with its text
    after[116:150, 20:220] = (10, 10, 10)      # and rows that moved below it, adjoining
    assert proposals.highlight_box(before, after, (100, 108)) == [20, 100, 219, 115]
    assert proposals.changed_regions(before, after)[0] == [20, 100, 219, 149]


def test_ocr_box_under_or_near_the_point():
    from clinigym.agents.ocr import TextBox
    boxes = [TextBox("Yes", (10, 10, 40, 25)), TextBox("No", (60, 10, 80, 25))]
    assert proposals.ocr_box(boxes, (20, 20)) == ([10, 10, 40, 25], "Yes")
    assert proposals.ocr_box(boxes, (50, 20)) == ([60, 10, 80, 25], "No")   # 10 px from both: the smaller
    assert proposals.ocr_box(boxes, (45, 20)) == ([10, 10, 40, 25], "Yes")
    assert proposals.ocr_box(boxes, (200, 200)) is None


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """One dataset that both live tasks are appended to."""
    return tmp_path_factory.mktemp("collected") / "dataset"


def _validate(dataset: Path, task: str, backends) -> dict:
    from clinigym.eval.validate import validate_dataset
    mapping = yaml.safe_load((dataset / "scenario-map.yaml").read_text())
    report = validate_dataset(dataset, {task: mapping[task]}, backends=backends)
    assert [t.task for t in report.tasks] == [task]
    return report


@pytest.mark.live
def test_collect_dicomscope_task_on_the_page(browser, backends, dataset, tmp_path):
    # The scenario's boxes as first measured by hand (the scenario now names its targets).
    truth = [[44, 124, 450, 139], [147, 21, 171, 45], [909, 552, 952, 576]]
    session = CollectSession("dicomscope", None, "Delete the study of PHANTOM^ALICE",
                             backend=backends("dicomscope"), scenario_dir=tmp_path / "scenarios", dataset=dataset)
    session.open()
    server = CollectServer(session).start()
    page = Page(browser, server)
    try:
        # Only loopback, only with the token; malformed input gets the reason.
        assert server.url.startswith("http://127.0.0.1:")
        assert api(server, "/api/state", token="wrong").status_code == 403
        assert api(server, "/", token="").status_code == 403
        bad = api(server, "/api/action", "{not json")
        assert bad.status_code == 400 and "malformed JSON" in bad.json()["error"]
        bad = api(server, "/api/action", {"type": "click", "x": 5000, "y": 3})
        assert bad.status_code == 400 and "outside the 1920x1080 screen" in bad.json()["error"]
        assert api(server, "/api/undo", {}).status_code == 409            # nothing to undo yet

        # A crafted bad step: a click on the toolbar's empty end. It is flagged, and undone.
        start = session.display.grab().rgb
        step = page.act(1000, 33)
        assert step["changed_pixels"] <= session.app.settle.min_changed
        assert page.accept_refused("Click on the empty toolbar.") == ["no_screen_change"]
        assert api(server, "/api/action", {"type": "click", "x": 10, "y": 10}).status_code == 409  # pending
        page.page.click("#undo")
        page.page.wait_for_function("window.collect.state.steps.length === 0 && !window.collect.inflight",
                                    timeout=TIMEOUT)
        after_undo = session.display.grab().rgb
        assert np.mean(np.all(after_undo == start, axis=-1)) >= 0.9999

        measured = []
        plan = [((200, 131), "Select the study of PHANTOM^ALICE in the browser."),
                ((159, 33), "Click on the 'Delete' icon in the toolbar."),
                ((930, 564), "Confirm the deletion with 'Yes'.")]
        for i, ((x, y), instruction) in enumerate(plan):
            step = page.act(x, y)
            proposed = page.box()
            measured.append((step["proposal"]["source"], round(iou(proposed, truth[i]), 4)))
            assert iou(proposed, truth[i]) >= 0.8, (i, step["proposal"], truth[i])
            # Each flag fires on a crafted variant of this good step, and none on the step itself.
            checks = {"click_outside_box": ([1500, 900, 1540, 930], instruction),
                      "box_too_large": ([0, 0, 1919, 1079], instruction),
                      "empty_instruction": (proposed, "")}
            for flag, (box, text) in checks.items():
                got = api(server, "/api/check", {"step": i, "box": box, "instruction": text}).json()["flags"]
                assert got == [flag], (flag, got)
            if i == 0:    # the page refuses an empty instruction, then saves the fixed one
                assert page.accept_refused("") == ["empty_instruction"]
            if i == 1:    # adjust: drag the bottom-right corner out and back near the icon's edge ...
                page.drag_handle("se", 40, 30)
                grown = page.box()
                assert abs(grown[2] - proposed[2] - 40) <= 2 and abs(grown[3] - proposed[3] - 30) <= 2
                page.drag_handle("se", truth[i][2] - grown[2], truth[i][3] - grown[3])
                # ... then nudge that corner with the arrow keys onto it exactly
                for _ in range(20):
                    box = page.box()
                    dx, dy = truth[i][2] - box[2], truth[i][3] - box[3]
                    if (dx, dy) == (0, 0):
                        break
                    page.page.keyboard.press("ArrowRight" if dx > 0 else "ArrowLeft" if dx < 0 else
                                             "ArrowDown" if dy > 0 else "ArrowUp")
                assert page.box() == [float(v) for v in truth[i]]
                measured.append(("adjusted", round(iou(page.box(), truth[i]), 4)))
            page.accept(instruction)
        print("\nDICOMscope proposed boxes vs the scenario's boxes (source, IoU):", measured)
        steps = session.state()["steps"]
        assert [s["flags"] for s in steps] == [[], [], []]
        assert [s["accepted"] for s in steps] == [True, True, True]

        result = page.end("Delete the study of PHANTOM^ALICE", "delete-alice")
        assert result["status"] == "complete" and result["tca"] == 1.0, result
        assert [s["correct"] for s in result["steps"]] == [True, True, True]
        scenario = yaml.safe_load(Path(result["scenario"]).read_text())
        assert Path(result["scenario"]).parent == tmp_path / "scenarios"
        # The 'Yes' button is named by the program's tree; the study row, a label whose name
        # holds dates (not a name to rely on), by its place in the study browser's tree; the
        # adjusted toolbar box keeps its box.
        assert [s["target"] for s in scenario["steps"]] == [
            {"element": {"role": "label", "within": {"role": "label", "name": "All Studies"}, "index": 1}},
            {"box": truth[1]}, {"element": {"role": "push button", "name": "Yes"}}]
        assert {"window": "^Delete Objects$"} in scenario["steps"][1]["transition"]
        assert {"no_window": "^Delete Objects$"} in scenario["steps"][2]["transition"]
        assert page.js("document.getElementById('result').dataset.status") == "complete"
        # the dataset: MedSPOT format + parquet, faithful to the live program
        task = result["task"]
        ann = read_file(dataset / "dicomscope_Annotation.json")
        assert [t.key for t in ann] == [task] and len(ann[0].steps) == 3
        report = _validate(dataset, task, backends)
        assert report.fidelity() == 1.0 and report.flagged == 0, report.to_json()
        assert (dataset / "collected.parquet").exists()
        assert not page.errors, page.errors
        assert all(u.startswith(f"http://127.0.0.1:{server.port}/") for u in page.requests)
    finally:
        page.close()
        server.stop()
        session.close()


@pytest.mark.live
def test_collect_orthanc_task_on_the_page(browser, backends, dataset, tmp_path):
    reference = select("orthanc/delete-study")[0]
    backend = backends("orthanc")
    session = CollectSession("orthanc", "orthanc/delete-study", "", backend=backend,
                             scenario_dir=tmp_path / "scenarios", dataset=dataset)
    session.open()
    server = CollectServer(session).start()
    page = Page(browser, server)
    try:
        assert page.js("document.getElementById('overview').value") == reference.overview
        measured = []
        for i, ref in enumerate(reference.steps):
            truth = backend.resolve(ref.target).as_list()       # the live DOM box
            # a person's click: inside the element, not at its centre
            x, y = truth[0] + 0.3 * (truth[2] - truth[0]), truth[1] + 0.65 * (truth[3] - truth[1])
            step = page.act(int(x), int(y))
            assert step["proposal"]["source"] == "dom" and step["proposal"]["selector"]
            measured.append(round(iou(page.box(), truth), 4))
            assert iou(page.box(), truth) >= 0.8, (i, step["proposal"], truth)
            assert step["flags"] == [] and step["suggestion"]
            if i == 1 and os.environ.get(SCREENSHOT_ENV):
                shot = Path(os.environ[SCREENSHOT_ENV])
                shot.parent.mkdir(parents=True, exist_ok=True)
                page.page.screenshot(path=str(shot))
            page.accept(ref.instruction)
        print("\nOrthanc proposed boxes vs the DOM boxes (IoU):", measured)
        result = page.end("Delete the study CT CHEST PHANTOM", "delete-chest")
        assert result["status"] == "complete" and result["tca"] == 1.0, result
        scenario = yaml.safe_load(Path(result["scenario"]).read_text())
        assert scenario["setup"] == [s.model_dump(exclude_none=True, mode="json") for s in reference.setup]
        targets = [s["target"] for s in scenario["steps"]]
        assert all("selector" in t for t in targets), targets
        assert targets[1] == {"selector": "#study.ui-page-active #study-delete"}
        # appended: the DICOMscope task of the test before is still there (when it ran)
        task = result["task"]
        assert task == f"orthanc/{len(read_file(dataset / 'orthanc_Annotation.json')) - 1}"
        report = _validate(dataset, task, backends)
        assert report.fidelity() == 1.0 and report.flagged == 0, report.to_json()
        from datasets import Dataset
        rows = Dataset.from_parquet(str(dataset / "collected.parquet"))
        assert "orthanc" in set(rows["app"]) and len(rows) >= 3
        # after the end: a new task starts from the start state again
        assert api(server, "/api/action", {"type": "click", "x": 10, "y": 10}).status_code == 409
        assert not page.errors, page.errors
    finally:
        page.close()
        server.stop()
        session.close()


@pytest.mark.live
def test_review_an_agent_episode_and_fix_a_box(browser, backends, tmp_path):
    from clinigym.envs.steps import StepsEnv
    from clinigym.run.runner import agent_for, run_episode
    scenario = select("orthanc/open-patient-study")[0]
    env = StepsEnv(scenario, backend=backends("orthanc"), record_dir=tmp_path / "run", agent_name="random",
                  recovery=True, max_actions=3)
    run_episode(env, agent_for(env, "random", 3), 3)
    env.close()
    episode = next((tmp_path / "run").iterdir())
    session = ReviewSession(episode)
    server = CollectServer(session).start()
    page = Page(browser, server)
    try:
        steps = session.state()["steps"]
        assert len(steps) >= 1 and steps[0]["target_box"] and steps[0]["point"]
        assert page.js("window.collect.editing.index") == 0
        if len(steps) > 1:
            page.page.click("#next")
            assert page.js("window.collect.editing.index") == 1
            page.page.click("#prev")
        recorded = steps[0]["target_box"]
        page.page.click("#mark-wrong")
        assert page.box() == [round(v, 1) for v in recorded]
        page.drag_handle("nw", 30, 10)
        page.drag_handle("se", -20, 5)
        fixed = page.box()
        page.page.fill("#instruction", "the target is the patient row")
        page.page.click("#save-fix")
        page.page.wait_for_function("window.collect.state.steps[0].correction !== null", timeout=TIMEOUT)
        out = episode / "corrected"
        ann = read_file(out / "orthanc_Annotation.json")
        w, h = session.width, session.height
        x, y, bw, bh = ann[0].steps[0].actions[0].bbox
        assert [x * w / 100, y * h / 100, (x + bw) * w / 100, (y + bh) * h / 100] == pytest.approx(fixed)
        assert (out / ann[0].steps[0].image_path).exists()
        corrections = json.loads((out / "corrections.json").read_text())["corrections"]
        assert corrections == [{"t": 0, "step": 0, "instruction": steps[0]["instruction"],
                                "recorded_box": recorded, "box": fixed, "note": "the target is the patient row"}]
        assert fixed != [round(v, 1) for v in recorded]
        # the other steps keep their recorded boxes; bad input is refused
        assert len(ann[0].steps) == sum(1 for s in steps if s["target_box"])
        bad = api(server, "/api/correct", {"t": 0, "box": [10, 10, 5, 5]})
        assert bad.status_code == 400 and "x1 < x2" in bad.json()["error"]
        assert api(server, "/api/correct", {"t": 99, "box": [1, 1, 5, 5]}).status_code == 400
        assert api(server, "/api/action", {"type": "click", "x": 1, "y": 1}).status_code == 404
        assert not page.errors, page.errors
    finally:
        page.close()
        server.stop()
