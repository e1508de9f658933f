"""The `clinigym` command on the real programs."""
import json

import pytest

from conftest import clinigym


@pytest.mark.parametrize("sub, flags", [
    ("programs", ["--json", "--packages", "--fetch"]), ("scenarios", ["--json"]),
    ("run", ["--agent", "--model-family", "--checkpoint", "--mode", "--budget", "--ray"]),
    ("score", ["--predictions", "--penalties", "--json-out"]), ("compare", ["--penalties", "--json"]),
    ("bench", ["--program", "--backends", "--tree", "--throughput", "--rounds", "--json-out"]),
    ("export", ["--medspot", "--parquet"]), ("report", ["--out"]),
    ("replay", ["--threshold", "--json"]), ("validate", ["--scenario-map", "--json"]), ("agents", ["--json"]),
    ("coverage", ["--json"]), ("shape", ["--per-program"]), ("images", ["--force"]), ("cleanup", ["--all"]),
    ("view", ["--duration"]), ("collect", ["--program", "--out", "--review"]), ("agreement", ["--threshold"])])
def test_help_everywhere(sub, flags):
    out = clinigym(sub, "--help").stdout
    assert f"usage: clinigym {sub}" in out and all(f in out for f in flags)
    assert "--path DIR" in clinigym("--help").stdout


def test_bench_rounds_at_least_one():
    done = clinigym("bench", "--throughput", "--rounds", "0", check=False)
    assert done.returncode == 2 and "--rounds: at least 1" in done.stderr


@pytest.mark.parametrize("argv, problem", [
    (["bench", "--repeats", "0"], "argument --repeats: at least 1"),
    (["bench", "--repeats", "x"], "argument --repeats: a whole number, not 'x'"),
    (["run", "--episodes", "0", "--out", "unused"], "argument --episodes: at least 1"),
    (["run", "--per-program", "0", "--out", "unused"], "argument --per-program: at least 1")])
def test_counts_at_least_one(argv, problem):
    done = clinigym(*argv, check=False)
    assert done.returncode == 2 and problem in done.stderr


def test_score_of_empty_folder_fails(tmp_path):
    done = clinigym("score", str(tmp_path), check=False)
    assert done.returncode == 1 and "no recorded episodes" in done.stderr


def test_compare_of_a_missing_folder_fails(tmp_path):
    done = clinigym("compare", str(tmp_path / "nowhere"), check=False)
    assert done.returncode == 2 and "no such run folder" in done.stderr


def test_malformed_scenario_clear_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("app: orthanc\noverview: x\nsteps:\n  - instruction: y\n    action: click\n")
    done = clinigym("scenarios", str(bad), check=False)
    assert done.returncode == 2
    assert f"{bad}: steps[0].target: Field required" in done.stderr


def test_agents_lists_agents_and_families():
    data = json.loads(clinigym("agents", "--json").stdout)
    assert {"oracle", "random", "ocr", "http"} <= set(data["agents"])
    assert {"ui-tars-1.5", "qwen2.5-vl", "aguvis", "cogagent", "seeclick", "gpt-4o"} <= set(data["families"])
    assert set(data["cua_formats"]) == {"ui-tars-1.5", "qwen2.5-vl", "qwen3-vl", "openai-computer-use", "json"}


def test_ray_where_no_cluster_answers_fails_at_once(tmp_path):
    # Ray itself keeps trying an address for minutes; nothing listens on port 1 of loopback.
    done = clinigym("run", "--scenario", "dicomscope/*", "--per-program", "1", "--ray", "127.0.0.1:1",
                    "--no-progress", "--out", str(tmp_path / "run"), check=False)
    assert done.returncode == 1
    assert "RayError: no Ray cluster answers at 127.0.0.1:1" in done.stderr


def test_ray_is_for_live_scenarios(tmp_path):
    done = clinigym("run", "--dataset", str(tmp_path), "--ray", "--out", str(tmp_path / "run"), check=False)
    assert done.returncode == 2 and "--ray, only for live scenarios" in done.stderr
