"""A fresh oracle recording of a task family's instance, exported in MedSPOT format: `clinigym
validate` re-creates the instance from the family and the exported seed and flags nothing, and
the replay of the recording is identical. Seed and split are drawn at random on every run; a
failure's message names them."""
from __future__ import annotations

import secrets

import pytest

from clinigym.envs.registration import make_env
from clinigym.eval import replay, validate
from clinigym.eval.export import to_medspot
from clinigym.recording import episode_folders, read_episode
from clinigym.run.episodes import run_episode
from clinigym.spec.cohort import SPLITS
from clinigym.spec.task_families import all_families
from conftest import oracle

pytestmark = pytest.mark.live
FAMILIES = all_families()


def sample(families, offset: int) -> list:
    """pytest parameters: `make test` runs the `offset`-th family, `make test-all` every one."""
    chosen = families[offset % len(families)].key
    return [pytest.param(f, id=f.key, marks=[] if f.key == chosen else [pytest.mark.slow]) for f in families]


def record(family, backend, seed: int, split: str, out) -> dict:
    """The oracle's steps-mode episode on instance `seed` of `split`, recorded under `out`; its last info."""
    env = make_env(family, "steps", backend=backend, record_dir=out, agent_name="oracle", split=split)
    try:
        return run_episode(env, oracle(env), seed)
    finally:
        env.close()


# `make test` runs the eighth family by key (when written, dicomscope/save-image-lookalikes: seven
# steps, typed text among them, about 20 s).
@pytest.mark.parametrize("family", sample(FAMILIES, 7))
def test_an_exported_instance_validates_and_its_recording_replays_identically(family, backends, tmp_path):
    seed, split = secrets.randbelow(2**31), SPLITS[secrets.randbelow(len(SPLITS))]
    drawn = f"seed {seed}, split {split}"
    info = record(family, backends(family.app), seed, split, tmp_path / "run")
    assert info["is_success"], (drawn, info.get("end_reason"))
    [folder] = episode_folders(tmp_path / "run")
    episode = read_episode(folder)
    n = len(family.scenario.steps)
    assert (episode.header.instance, episode.header.split, episode.header.gym_id, len(episode.steps)) == (
        seed, split, family.mode_gym_id("steps"), n), drawn

    [task] = to_medspot([tmp_path / "run"], tmp_path / "dataset")
    assert task.extra["clinigym"] == {"scenario": family.key, "episode": folder.name, "instance": seed,
                                      "split": split, "image_size": episode.header.coordinates["observation_size"]}
    assert len(task.steps) == n, drawn
    report = validate.validate_dataset(tmp_path / "dataset", None, backends)
    assert report.flagged == 0, (drawn, validate.format_report(report))
    [check] = report.tasks
    assert (check.scenario, check.instance, len(check.steps), check.fidelity, report.fidelity()) == (
        family.key, seed, n, 1.0, 1.0), drawn

    again = replay.replay_episode(folder, backends(family.app))
    assert again.all_match, (drawn, replay.format_report(again))
    assert (again.scenario, again.instance, len(again.steps)) == (family.key, seed, n), drawn
    assert all(s.live is not None and s.live.correct for s in again.steps), (drawn, replay.format_report(again))
