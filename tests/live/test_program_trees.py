"""Every program's tree, by name (issue #37): one short scenario per program, run by the oracle
with the set-of-marks observation. On the start screen, each target of the first step is a
mark: the mark of the element the target names, holding the target's centre. At every step,
the element the step names is exactly one element of the program's tree, and it holds the
step's target. The desktop programs' targets name their elements (``target: {element: ...}``,
found by that selector); Orthanc Explorer's and OHIF's are DOM selectors: their element in
Chromium's accessibility tree is named here, by role and name."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from elementcheck import Find, row_with_cell

from clinigym.core.elements import Element, Selector, Tree
from clinigym.core.geometry import Box
from clinigym.core.marks import marks_from_json
from clinigym.envs.steps import StepsEnv
from clinigym.spec.paths import builtin_root
from conftest import oracle

SCENARIOS = builtin_root() / "scenarios"


@dataclass(frozen=True)
class Case:
    scenario: str
    web: tuple[Find, ...] = ()   # a web program's steps: the element of each one's DOM target


CASES = {
    "aeskulap": Case("aeskulap/open-study-file.yaml"),
    "dicomscope": Case("dicomscope/medspot-01-flip.yaml"),
    "ginkgocadx": Case("ginkgocadx/medspot-09-dicom-inspector.yaml"),
    "gnuhealth": Case("gnuhealth/info-age.yaml"),
    "itksnap": Case("itksnap/info-slice-count.yaml"),
    "orthanc": Case("orthanc/info-birth-date.yaml", (
        Selector(role="link", name="All patients"),
        Selector(role="link", name="PHANTOM^CAROL PatientID: CG0003 *"),
    )),
    "ohif": Case("ohif/info-study-date.yaml", (
        row_with_cell("row", "PHANTOM, BOB"),     # OHIF's study rows have no name of their own
        Selector(role="button", name="Basic Viewer"),
    )),
}
# Their default backend on this machine is their Debian 11 container.
IN_CONTAINERS = {"ginkgocadx", "itksnap"}


def _named(case: Case, env: StepsEnv) -> list[tuple[Find, Box, bool]]:
    """The current step's targets, each with how its element is found by name, its box, and
    whether the target is the element's row."""
    index = env._step_index
    step = env.scenario.steps[index]
    out = []
    for target, box in zip((step.target, step.end_target), env._targets):
        if target is None:
            continue
        assert target.kind in ("element", "selector"), \
            f"{env.scenario.key} step {index + 1}: the target is not named: {target.model_dump(exclude_none=True)}"
        assert box is not None
        if target.kind == "element":
            assert target.named is not None
            out.append((target.named, box, bool(target.row)))
        else:
            out.append((case.web[index], box, False))
    return out


def _one(tree: Tree, find: Find, box: Box, row: bool, where: str) -> Element:
    x, y = box.center
    found = find(tree, (x, y)) if callable(find) else tree.find(find)
    assert len(found) == 1, f"{where}: {find} found {len(found)}:\n{tree.to_text()}"
    held = tree.row(found[0]) if row else found[0].box
    assert held is not None and held.contains(x, y), \
        f"{where}: {found[0].role} {found[0].name!r} at {held} does not hold the target {box}"
    return found[0]


@pytest.mark.parametrize("app", [pytest.param(a, marks=[pytest.mark.docker] if a in IN_CONTAINERS else [])
                                 for a in CASES])
def test_the_steps_elements_are_found_by_name_and_the_first_ones_are_marks(app):
    case = CASES[app]
    env = StepsEnv(str(SCENARIOS / case.scenario), obs_mode="som")
    try:
        assert not case.web or len(case.web) == len(env.scenario.steps)
        obs, info = env.reset(seed=0)
        agent = oracle(env)
        marks = marks_from_json(obs["marks"])
        assert [m.number for m in marks] == list(range(1, len(marks) + 1))
        # The marks are drawn on the screenshot, and only there: the recording keeps the screen.
        drawn = (obs["screenshot"] != env._obs_rgb).any(axis=-1)
        assert drawn.any() and np.array_equal(obs["screenshot"][~drawn], env._obs_rgb[~drawn])
        reward, done = 0.0, False
        while not done:
            index = env._step_index
            # The som observation gives the marks, not the tree: the tree is read again, on the
            # same settled screen.
            tree = env._tree()
            assert tree.truncated is None and tree.source == env.app.accessibility.source
            for find, box, row in _named(case, env):
                element = _one(tree, find, box, row, f"{case.scenario} step {index + 1}")
                if index == 0:
                    assert element.box is not None
                    mark = (element.role, element.name, [round(v, 1) for v in element.box.as_list()])
                    assert mark in [(m.role, m.name, m.box.as_list()) for m in marks], \
                        f"no mark is {mark}:\n{obs['marks']}"
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            done = terminated or truncated
        assert reward == 1.0 and index == len(env.scenario.steps) - 1, info["end_reason"]
    finally:
        env.close()
