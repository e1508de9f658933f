"""The static keyframe environment on MedSPOT's own annotation files, with synthetic
placeholder keyframes (the real screenshots are not distributed)."""

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from PIL import Image

from clinigym.core.judge import SMALL_AREA
from clinigym.envs import PUBLIC_INFO, agent_context, ground_truth, register_envs
from clinigym.envs.static import StaticEnv
from clinigym.eval.scoring import score_dirs
from clinigym.recording import episode_folders, read_episode
from clinigym.spec.medspot import read_dataset, write_dataset
from conftest import medspot_annotations

SIZE = (320, 180)   # keyframe and observation size for speed; boxes are in percent


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """MedSPOT's annotation files plus one placeholder keyframe per image path."""
    folder = tmp_path_factory.mktemp("medspot")
    tasks = read_dataset(medspot_annotations())
    write_dataset(tasks, folder)
    for t in tasks:
        for s in t.steps:
            path = folder / s.image_path
            path.parent.mkdir(parents=True, exist_ok=True)
            shade = (hash(s.image_path) % 200) + 20
            Image.new("RGB", SIZE, (shade, 255 - shade, 128)).save(path)
    return folder


def run(env, policy, episodes):
    for _ in range(episodes):
        obs, info = env.reset()
        done = False
        while not done:
            obs, _, term, trunc, info = env.step(policy(env, obs))
            done = term or trunc


def test_oracle_completes_every_scorable_task(dataset, tmp_path):
    env = StaticEnv(dataset, observation_size=SIZE, record_dir=tmp_path, agent_name="oracle")
    assert len(env.tasks) == 216 and env.skipped_tasks == []
    run(env, lambda e, obs: ground_truth(e).action(), len(env.tasks))
    summary, results = score_dirs([tmp_path])
    assert summary["n_tasks"] == 216 and summary["tca"] == 1.0 and summary["shr"] == 1.0
    assert sum(r.n_steps for r in results) == 607 - 4     # the 4 steps without actions are skipped


def test_scripted_agent_metrics_equal_hand_computed(dataset, tmp_path):
    """Right on the first step, then a click at (0, 0): c_t = 1 for multi-step tasks."""
    env = StaticEnv(dataset, software="DICOMscope", observation_size=SIZE, record_dir=tmp_path)

    def policy(e, obs):
        return ground_truth(e).action() if obs["step"] == 0 else "click(0, 0)"
    run(env, policy, len(env.tasks))
    summary, results = score_dirs([tmp_path])
    n = [len([s for s in t.steps if s.scorable]) for t in env.tasks]
    c = [min(1, k) for k in n]
    t = len(n)
    assert summary["tca"] == pytest.approx(sum(k == 1 for k in n) / t)
    assert summary["s1a"] == pytest.approx(1.0)
    assert summary["shr"] == pytest.approx(sum(c) / sum(n))
    assert summary["shr_attempted"] == pytest.approx(sum(c) / sum(min(ci + 1, ni) for ci, ni in zip(c, n)))
    assert summary["wps"] == pytest.approx(1.0)
    norm = [1 / sum(0.8 ** i for i in range(k)) for k in n]
    assert summary["wps_norm"] == pytest.approx(sum(norm) / t)
    # (0, 0) is in the edge band; small targets take precedence (rule order).
    small = 0
    for task in env.tasks:
        steps = [s for s in task.steps if s.scorable]
        if len(steps) > 1:
            b = steps[1].actions[0].box(*SIZE)
            small += b.area / (SIZE[0] * SIZE[1]) < SMALL_AREA
    failed = sum(k > 1 for k in n)
    assert summary["failures"] == {k: v for k, v in
                                   {"small_target": small, "edge_bias": failed - small}.items() if v}


def test_same_interface_and_check_env(dataset):
    env = StaticEnv(dataset, software="Orthanc", observation_size=SIZE)
    obs, info = env.reset(options={"task": 8})
    assert obs["screenshot"].shape == (SIZE[1], SIZE[0], 3)
    assert obs["instruction"] == "Click on the Anonymize button."
    assert info["coordinates"]["space"] == "observation_pixels"
    obs, reward, term, trunc, info = env.step({"type": "click", "x": SIZE[0] + 1, "y": 0})
    assert term and reward == 0 and "outside" in info["invalid_action"] and info["end_reason"] == "incorrect action"
    assert ground_truth(env).last_record().failure == "no_prediction"
    check_env(StaticEnv(dataset, software="Orthanc", observation_size=SIZE))


def test_missing_keyframe_is_a_clear_error(dataset, tmp_path):
    write_dataset([t for t in read_dataset(dataset) if t.software == "Orthanc"], tmp_path)
    env = StaticEnv(tmp_path, observation_size=SIZE)
    with pytest.raises(Exception, match="keyframe Images/.* not found"):
        env.reset()


def test_round_trip_of_the_published_files(tmp_path):
    import json
    tasks = read_dataset(medspot_annotations())
    write_dataset(tasks, tmp_path)
    assert read_dataset(tmp_path) == tasks
    for f in medspot_annotations().glob("*.json"):
        assert json.loads(f.read_text()) == json.loads((tmp_path / f.name).read_text())
    quirks = [s for t in tasks for s in t.steps if isinstance(s.instruction, dict)]
    assert len(quirks) == 1 and quirks[0].text.startswith("Select the DICOM file")
    assert sum(len(t.steps) for t in tasks) == 607 and len(tasks) == 216


def test_single_step_mode_scores_every_step(dataset, tmp_path):
    """Wrong on step 1, right after: strict TCA 0, single-step accuracy (n-1)/n per task."""
    env = StaticEnv(dataset, software="Orthanc", observation_size=SIZE, record_dir=tmp_path, single_step=True)
    run(env, lambda e, obs: "click(0, 0)" if obs["step"] == 0 else ground_truth(e).action(), len(env.tasks))
    summary, results = score_dirs([tmp_path])
    n = [len([s for s in t.steps if s.scorable]) for t in env.tasks]
    assert summary["tca"] == 0 and summary["shr"] == 0
    assert summary["single_step_accuracy"] == pytest.approx((sum(n) - len(n)) / sum(n))
    assert all(r.steps_correct == (False,) + (True,) * (r.n_steps - 1) for r in results)


def test_random_agent_metrics_equal_recomputation(dataset, tmp_path):
    """The random agent on every task; the scorer's numbers recomputed by hand from the
    recorded points with the hit rule and PROTOCOL.md's formulas."""
    from clinigym.agents import make_agent
    from clinigym.core.geometry import Box
    from clinigym.core.judge import failure_type, hit
    from clinigym.recording import episode_folders, read_episode

    env = StaticEnv(dataset, observation_size=SIZE, record_dir=tmp_path, agent_name="random")
    agent = make_agent("random", env.agent_context(), seed=7)
    run(env, lambda e, obs: agent.act(obs, {}), len(env.tasks))
    summary, _ = score_dirs([tmp_path])
    c, n, labels = [], [], {}
    for folder in episode_folders(tmp_path):
        ep = read_episode(folder)
        ok = 0
        for rec in ep.steps:
            box = Box(*rec.target_box)
            point = rec.action["point"]
            if not hit(point, box):
                label = failure_type(point, box, *SIZE)
                labels[label] = labels.get(label, 0) + 1
                break
            ok += 1
        c.append(ok)
        n.append(ep.header.n_steps)
    t = len(n)
    assert t == 216
    assert summary["tca"] == pytest.approx(sum(ci == ni for ci, ni in zip(c, n)) / t)
    assert summary["s1a"] == pytest.approx(sum(ci >= 1 for ci in c) / t)
    assert summary["shr"] == pytest.approx(sum(c) / sum(n))
    assert summary["wps"] == pytest.approx(sum(sum(0.8 ** i for i in range(ci)) for ci in c) / t)
    assert summary["failures"] == labels
    assert summary["tca"] < 1.0


def test_gym_make_gives_the_agent_context_and_the_recorded_verdict(dataset, tmp_path):
    """Through gym.make's wrappers: the agent context, and at the step that ends each episode
    `is_success` equal to the recorded outcome (a completed task; a miss at once)."""
    register_envs()
    env = gym.make("clinigym/Static-v0", dataset=dataset, software="Orthanc", observation_size=SIZE,
                   record_dir=tmp_path)
    assert agent_context(env) == env.unwrapped.agent_context() and agent_context(env).program == "Orthanc"
    verdicts = []
    for policy in (lambda: ground_truth(env).action(), lambda: "click(0, 0)"):
        env.reset(options={"task": 8})
        done, infos = False, []
        while not done:
            _, _, term, trunc, info = env.step(policy())
            infos.append(info)
            done = term or trunc
        assert all("is_success" not in i for i in infos[:-1]) and set(infos[-1]) <= set(PUBLIC_INFO)
        verdicts.append(infos[-1]["is_success"])
    env.close()
    recorded = [read_episode(f).outcome for f in episode_folders(tmp_path)]
    assert verdicts == [True, False] == [o.is_success for o in recorded]
    assert [o.status for o in recorded] == ["complete", "failed"]
