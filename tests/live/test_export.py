"""Live runs out as datasets: MedSPOT format (then through the static environment with
the same actions: same metrics) and parquet for training."""
from __future__ import annotations

import json
import shutil

import pytest

from clinigym.envs import ground_truth
from clinigym.envs.static import StaticEnv
from clinigym.envs.steps import StepsEnv
from clinigym.eval.export import to_medspot, to_parquet
from clinigym.eval.scoring import score_dirs
from clinigym.recording import episode_folders, read_episode
from clinigym.spec.medspot import read_dataset
from clinigym.spec.scenarios import select

pytestmark = pytest.mark.live
SCENARIOS = select("orthanc/*")[:3] + select("dicomscope/medspot-17-delete-study")
METRICS = ("tca", "s1a", "shr", "shr_attempted", "wps", "wps_norm", "failures", "n_tasks")


def run_live(scenario, backend, out, agent_name, right_until):
    """Oracle actions up to step `right_until`, then a click in the lower-left corner area."""
    env = StepsEnv(scenario, backend=backend, record_dir=out, agent_name=agent_name)
    obs, info = env.reset(seed=0)
    while True:
        action = ground_truth(env).action() if obs["step"] < right_until else "click(200, 1000)"
        obs, _, term, trunc, info = env.step(action)
        if term or trunc:
            break
    env.close()


@pytest.fixture(scope="module")
def runs(backends, tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for i, s in enumerate(SCENARIOS):
        run_live(s, backends(s.app), root / "oracle" / "episodes", "oracle", 99)
        # the first scenario completed, the others wrong at steps 2, 3, 1...
        right_until = len(s.steps) if i == 0 else i % len(s.steps)
        run_live(s, backends(s.app), root / "agent" / "episodes", "scripted", right_until)
    return root


def test_medspot_export_round_trip_and_same_metrics(runs, tmp_path):
    dataset = tmp_path / "dataset"
    tasks = to_medspot([runs / "oracle"], dataset)
    assert len(tasks) == len(SCENARIOS)
    assert read_dataset(dataset) == sorted(tasks, key=lambda t: (t.software, t.index))
    for t in tasks:
        for s in t.steps:
            assert (dataset / s.image_path).exists()
    # The scripted agent's recorded actions, replayed on the static keyframes.
    actions = {}
    for folder in episode_folders(runs / "agent"):
        ep = read_episode(folder)
        actions[ep.header.scenario] = [rec.action for rec in ep.steps]
    static_out = tmp_path / "static"
    env = StaticEnv(dataset, record_dir=static_out)
    for task in env.tasks:
        obs, _ = env.reset(options={"task": task.key})
        script = actions[task.extra["clinigym"]["scenario"]]
        done = False
        while not done:
            obs, _, term, trunc, _ = env.step(script[obs["step"]])
            done = term or trunc
    live, _ = score_dirs([runs / "agent"])
    static, _ = score_dirs([static_out])
    assert {k: static[k] for k in METRICS} == {k: live[k] for k in METRICS}
    assert 0 < live["tca"] < 1


def test_parquet_export_is_self_contained(runs, tmp_path):
    import pyarrow.parquet as pq
    from datasets import Dataset

    copy = tmp_path / "runs"
    shutil.copytree(runs / "agent", copy)
    path = to_parquet([copy], tmp_path / "steps.parquet")
    shutil.rmtree(copy)                       # the images must be inside the parquet file
    table = pq.read_table(path)
    n_steps = sum(len(read_episode(f).steps) for f in episode_folders(runs / "agent"))
    assert table.num_rows == n_steps
    ds = Dataset.from_parquet(str(path))
    row = ds[0]
    assert row["image"].size == (1920, 1080) and row["instruction"]
    assert set(json.loads(json.dumps(ds.features.to_dict()))) >= {"image", "instruction", "target_box", "correct"}


def test_training_export_round_trip_against_the_recordings(runs, tmp_path):
    """Every field of every step and the episode's verdict, loaded back with `datasets`."""
    import datasets

    from clinigym.eval.training_export import COLUMNS, to_training
    out = tmp_path / "training"
    done = to_training([runs / "oracle", runs / "agent"], out)
    episodes = [(f"{i}-{d}/{f.name}", read_episode(f)) for i, d in enumerate(("oracle", "agent"), 1)
                for f in episode_folders(runs / d)]
    assert done.rows == {"unsplit": sum(len(e.steps) for _, e in episodes)}
    loaded = datasets.load_dataset(str(out))["unsplit"]
    assert loaded.column_names == list(COLUMNS)
    rows = {(r["episode"], r["t"]): r for r in loaded}
    [jsonl_file] = (out / "data").glob("unsplit-*.jsonl")
    jsonl = [json.loads(line) for line in jsonl_file.read_text().splitlines()]
    assert len(jsonl) == len(rows)
    for name, e in episodes:
        for rec in e.steps:
            row = rows[(name, rec.t)]
            action = rec.action or {}
            assert (row["task"], row["mode"], row["agent"], row["instruction"], row["step"]) == (
                e.header.scenario, e.header.mode, e.header.agent, rec.instruction, rec.step)
            assert row["action_type"] == action.get("type", "")
            assert row["point"] == pytest.approx(list(action.get("point") or []))
            assert row["target_box"] == pytest.approx(rec.target_box or [])
            assert (row["correct"], row["failure"], row["hit"]) == (rec.correct, rec.failure or "", rec.hit)
            assert json.loads(row["raw_action"]) == json.loads(json.dumps(rec.raw_action, default=str))
            assert json.loads(row["timings"]) == pytest.approx(rec.timings)
            assert (row["episode_status"], row["is_success"]) == (e.status, e.outcome.is_success)
            assert row["image"].size == (1920, 1080)
            assert (out / f"images/{name}/{rec.before}").read_bytes() == \
                (e.folder / rec.before).read_bytes()
    assert "## Programs" in (out / "README.md").read_text()
    # Exported again under the same folder name, with other rows: `datasets` loads the new
    # rows, not what it cached of the first export (it caches a folder by its name and file names).
    again = tmp_path / "again" / "training"
    to_training([runs / "agent"], again)
    assert datasets.load_dataset(str(again))["unsplit"].num_rows == sum(
        len(e.steps) for name, e in episodes if name.startswith("2-agent/"))
