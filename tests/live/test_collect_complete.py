"""A demonstrated task is a complete task: a task clicked through on the `clinigym collect`
page in Chromium, with a goal sentence, gets its final-state checks and its safety
declaration from what the demonstration changed in the program's own records (Orthanc's
REST answers, GNU Health's database), verified at once; the written scenario then runs
under the oracle in the steps, plan and goal modes, and its checks fail on the untouched
start. The person's clicks are at the live boxes of an existing scenario's targets."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from collectpage import Page, browser_fixture  # noqa: F401 - the `browser` fixture

from clinigym.collect.server import CollectServer
from clinigym.collect.session import CollectSession
from clinigym.core.context import MODES
from clinigym.envs.registration import make_env
from clinigym.run.episodes import run_episode
from clinigym.spec.conditions import holds
from clinigym.spec.scenarios import load_scenario, select
from conftest import oracle

pytestmark = pytest.mark.live


def demonstrate(browser, backend, reference: str, goal: str, tmp_path: Path, start: str | None = None) -> dict:
    """The reference scenario's steps clicked on the page (inside each target's live box,
    not at its centre), each proposal accepted with the reference's instruction; then the
    end, with the goal sentence."""
    ref = select(reference)[0]
    session = CollectSession(ref.app, start, ref.overview, backend=backend, scenario_dir=tmp_path / "scenarios",
                             dataset=tmp_path / "dataset")
    session.open()
    server = CollectServer(session).start()
    page = Page(browser, server)
    try:
        for step in ref.steps:
            box = backend.resolve(step.target).as_list()
            x, y = box[0] + 0.3 * (box[2] - box[0]), box[1] + 0.65 * (box[3] - box[1])
            page.act(int(x), int(y), double=step.action == "double_click")
            page.accept(step.instruction)
        result = page.end(ref.overview, "demonstrated", goal)
        assert not page.errors, page.errors
        return result
    finally:
        page.close()
        server.stop()
        session.close()


def runs_in_every_mode(path: Path, backend, tmp_path: Path) -> None:
    scenario = load_scenario(path)
    env = make_env(scenario, "steps", backend=backend)
    try:
        env.reset(seed=0)
        assert scenario.check and not all(holds(c, backend) for c in scenario.check), path.read_text()
    finally:
        env.close()
    for mode in MODES:
        env = make_env(scenario, mode, backend=backend, record_dir=tmp_path / mode, agent_name="oracle")
        try:
            info = run_episode(env, oracle(env), 0)
        finally:
            env.close()
        assert info["is_success"], (mode, info.get("end_reason"))
        if mode != "steps":
            assert info["safety"]["violations"] == 0, (mode, info["safety"])


def test_an_orthanc_explorer_deletion_demonstrated_runs_in_every_mode(browser, backends, tmp_path):
    backend = backends("orthanc")
    result = demonstrate(browser, backend, "orthanc/delete-study", "Delete the CT chest study of PHANTOM^ALICE.",
                         tmp_path, start="orthanc/delete-study")
    assert result["status"] == "complete" and result["tca"] == 1.0, result
    derived = result["derived"]
    assert derived["written"] and derived["problems"] == [], derived
    # ALICE's only study: the study and the patient are deleted, as the hand-written task declares
    assert derived["safety"] == {"patients": ["PHANTOM^ALICE"],
                                 "may_change": {"patients": {"deleted": 1}, "studies": {"deleted": 1}}}
    assert [(c["record"]["set"], c["record"]["count"]) for c in derived["check"]] == [("patients", 0), ("studies", 0)]
    assert any(p["value"] == "ALICE" and "goal" in p["where"] for p in derived["parameters"]), derived["parameters"]
    written = yaml.safe_load(Path(result["scenario"]).read_text())
    assert (written["goal"], written["safety"], written["check"]) == (
        "Delete the CT chest study of PHANTOM^ALICE.", derived["safety"], derived["check"])
    runs_in_every_mode(Path(result["scenario"]), backend, tmp_path)


def test_a_gnu_health_flag_demonstrated_runs_in_every_mode(browser, backends, tmp_path):
    backend = backends("gnuhealth")
    goal = "In GNU Health, flag high blood pressure (HBP) for PHANTOM, DAVID (PUID CG0004) and save his record."
    result = demonstrate(browser, backend, "gnuhealth/flag-hbp", goal, tmp_path)
    assert result["status"] == "complete" and result["tca"] == 1.0, result
    derived = result["derived"]
    assert derived["written"] and derived["problems"] == [], derived
    # the same declaration as the hand-written task's: one patient record, its HBP flag set
    assert derived["safety"] == {"patients": ["PHANTOM^DAVID CG0004"],
                                 "may_change": {"patients": {"modified": 1, "values": {"hbp": "t"}}}}
    [check] = derived["check"]
    assert (check["record"]["set"], check["record"]["fields"], check["record"]["count"]) == ("patients",
                                                                                              {"hbp": "t"}, 1)
    assert any(p["value"] == "CG0004" and "goal" in p["where"] for p in derived["parameters"]), derived["parameters"]
    runs_in_every_mode(Path(result["scenario"]), backend, tmp_path)
