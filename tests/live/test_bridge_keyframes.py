"""Reading the tree does not change what the screen shows (issue #37): the oracle's keyframes of
one scenario per desktop program are the same with the accessibility bridge off and on (the
tree read at every step, as the ``screenshot+a11y`` observation does).

The scenarios' targets name their elements, which needs the bridge: the run without it plays
a copy of the scenario whose targets and `changed` regions are the pixel boxes the run with
it resolved (their boxes on the same screen)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from clinigym.envs.steps import StepsEnv
from clinigym.recording import Episode, episode_folders, read_episode
from clinigym.spec.conditions import Target
from clinigym.spec.paths import builtin_root
from clinigym.spec.scenarios import Scenario, load_scenario
from conftest import oracle

SCENARIOS = builtin_root() / "scenarios"
CASES = {
    "aeskulap": "aeskulap/open-study-file.yaml",
    "dicomscope": "dicomscope/medspot-01-flip.yaml",
    "ginkgocadx": "ginkgocadx/medspot-09-dicom-inspector.yaml",
    "gnuhealth": "gnuhealth/info-age.yaml",
    "itksnap": "itksnap/info-slice-count.yaml",
}
IN_CONTAINERS = {"ginkgocadx", "itksnap"}
# Two episodes each (10-30 s): one program in `make test`, DICOMscope, whose bridge reaches
# furthest into the program (a jar on Java's boot class path); every one in `make test-all`.
QUICK = {"dicomscope"}


@dataclass(frozen=True)
class Known:
    """A keyframe difference that is not the bridge's: two runs without it differ the same way."""
    keyframe: str
    box: tuple[int, int, int, int]   # the differing pixels lie in it (x1, y1, x2, y2)
    levels: int                      # the most any colour channel differs


KNOWN = {
    # The DICOM Inspector's grid lines (the columns' separator, the rows' left and right ends)
    # come in one of two greys (RGB 254/232 or 243/228), run to run: in 2 runs with the bridge
    # and 2 without, each grey came once each way; 168 pixels, 11 levels at most.
    "ginkgocadx": Known("step-001-after.png", (632, 326, 1292, 723), 11),
}


def _marks(app: str) -> list[pytest.MarkDecorator]:
    return ([pytest.mark.docker] if app in IN_CONTAINERS else []) + ([] if app in QUICK else [pytest.mark.slow])


def _play(scenario: Scenario, obs_mode: str, record_dir: Path) -> tuple[list[list], list[list], bool, float]:
    """The oracle's episode, recorded: each step's resolved target boxes and, after it, its
    `changed` regions' boxes (screen pixels), whether the program ran with its bridge, and the
    reward."""
    env = StepsEnv(scenario, obs_mode=obs_mode, record_dir=record_dir)
    boxes, regions = [], []
    try:
        obs, info = env.reset(seed=0)
        assert env.coords.info()["observation_size"] == env.coords.info()["screen_size"]
        agent = oracle(env)
        done, reward = False, 0.0
        while not done:
            step = scenario.steps[len(boxes)]
            boxes.append([None if b is None else b.as_list() for b in env._targets])
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            regions.append([env.backend.resolve(c.value).as_list() if c.kind == "changed" else None
                            for c in step.transition])
            done = terminated or truncated
        return boxes, regions, env.backend.accessibility, reward
    finally:
        env.close()


def _boxed(scenario: Scenario, boxes: list[list], regions: list[list]) -> Scenario:
    """`scenario` with its steps' targets and `changed` regions replaced by their boxes."""
    steps = [step.model_copy(update={
                 "target": Target(box=target), "end_target": None if end is None else Target(box=end),
                 "transition": [c if box is None else c.model_copy(update={"changed": Target(box=box)})
                                for c, box in zip(step.transition, changed)]})
             for step, (target, end), changed in zip(scenario.steps, boxes, regions)]
    return scenario.model_copy(update={"steps": steps})


def _episode(record_dir: Path) -> Episode:
    (folder,) = episode_folders(record_dir)
    return read_episode(folder)


def _keyframes(episode: Episode) -> list[tuple[str, np.ndarray]]:
    names = [n for s in episode.steps for n in (s.before, s.after) if n]
    return [(n, np.asarray(Image.open(episode.folder / n).convert("RGB"))) for n in names]


def _differences(off: list[tuple[str, np.ndarray]], on: list[tuple[str, np.ndarray]]) -> dict[str, tuple]:
    """Per keyframe that differs: the number of pixels that differ, their bounding box, and the
    most any colour channel differs."""
    assert [n for n, _ in off] == [n for n, _ in on]
    out = {}
    for (name, a), (_, b) in zip(off, on):
        levels = np.abs(a.astype(np.int16) - b.astype(np.int16)).max(axis=-1)
        if levels.any():
            ys, xs = np.nonzero(levels)
            out[name] = (int((levels > 0).sum()), (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1),
                         int(levels.max()))
    return out


def _unexplained(app: str, differences: dict[str, tuple]) -> dict[str, tuple]:
    """The differences but the program's known one, if it is within its box and levels."""
    known = KNOWN.get(app)
    if known is None or known.keyframe not in differences:
        return differences
    _, (x1, y1, x2, y2), levels = differences[known.keyframe]
    kx1, ky1, kx2, ky2 = known.box
    if kx1 <= x1 and ky1 <= y1 and x2 <= kx2 and y2 <= ky2 and levels <= known.levels:
        return {k: v for k, v in differences.items() if k != known.keyframe}
    return differences


@pytest.mark.parametrize("app", [pytest.param(a, marks=_marks(a)) for a in CASES])
def test_the_oracle_s_keyframes_are_the_same_with_the_bridge_off_and_on(app, tmp_path):
    scenario = load_scenario(SCENARIOS / CASES[app])
    boxes, regions, bridge, reward = _play(scenario, "screenshot+a11y", tmp_path / "on")
    assert bridge and reward == 1.0
    boxed = _boxed(scenario, boxes, regions)
    assert not boxed.reads_tree
    again, _, bridge, reward = _play(boxed, "screenshot", tmp_path / "off")
    assert not bridge and reward == 1.0 and again == boxes
    off, on = _episode(tmp_path / "off"), _episode(tmp_path / "on")
    # Every step settled both ways (how long it took is the benchmark's: `clinigym bench`).
    assert [s.settled for s in off.steps] == [s.settled for s in on.steps] == [True] * len(scenario.steps)
    frames = _keyframes(off)
    assert len(frames) == 2 * len(scenario.steps)
    assert _unexplained(app, _differences(frames, _keyframes(on))) == {}
