"""`clinigym targets` on a live program (issue #37): a scenario written with pixel boxes
(Aeskulap's File > Open, as first measured by hand) gets every box named by the program's
own elements, the file is rewritten in place (its comments kept), and the oracle completes
the rewritten scenario."""
from __future__ import annotations

import json

from clinigym.envs.steps import StepsEnv
from clinigym.spec.scenarios import load_scenario
from conftest import clinigym, oracle

BOXES = """\
app: aeskulap
overview: Open the MR brain study through File > Open.
steps:
  - instruction: Open the 'File' menu.
    action: click
    target: {box: [3, 21, 41, 44]}   # measured by hand
    transition: {changed: {box: [3, 44, 189, 121]}}
  - instruction: Choose 'Open'.
    action: click
    target: {box: [5, 47, 187, 68]}
    transition: {window: ^Open DICOM Image files$}
  - instruction: Type the file name 'mr-brain/IMG0003.dcm'.
    action: type
    text: mr-brain/IMG0003.dcm
    target: {box: [660, 312, 1338, 337]}
    transition: {changed: {box: [660, 312, 1338, 337]}}
  - instruction: Click the 'Open' button.
    action: click
    target: {box: [1125, 798, 1336, 826]}
    transition: {no_window: ^Open DICOM Image files$}
"""
DIALOG = {"role": "dialog", "name": "Open DICOM Image files"}


def test_the_boxes_are_named_and_the_oracle_completes_the_rewritten_scenario(tmp_path):
    path = tmp_path / "lab" / "scenarios" / "aeskulap" / "by-hand.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(BOXES)
    done = clinigym("--path", str(tmp_path / "lab"), "targets", "aeskulap/by-hand", "--write", "--json",
                    "--no-progress")
    report = json.loads(done.stdout)
    assert (report["box_targets"], report["named"], report["rewritten"], report["failed"]) == (4, 4, 4, [])
    scenario = load_scenario(path)
    assert [s.target.model_dump(exclude_none=True) for s in scenario.steps] == [
        {"element": {"role": "menu item", "name": "File"}},
        {"element": {"role": "menu item", "name": "Open"}},
        {"element": {"role": "text", "within": DIALOG}},
        {"element": {"role": "push button", "name": "Open"}},   # the only one shown then
    ]
    assert "target: {element: {role: menu item, name: File}}  # measured by hand\n" in path.read_text()
    env = StepsEnv(scenario)
    try:
        obs, info = env.reset(seed=0)
        agent, done_ = oracle(env), False
        while not done_:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            done_ = terminated or truncated
        assert reward == 1.0 and info["end_reason"] == "completed"
    finally:
        env.close()
