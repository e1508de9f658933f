"""Whether two runs can be compared (clinigym.eval.compare.comparability, `clinigym compare`):
two synthetic run folders with real run.json and summary.json files, exact messages."""
from __future__ import annotations

import json
from pathlib import Path

from clinigym.cli.main import main
from clinigym.eval.compare import Comparability, check_runs, comparability, read_provenance

A1, A2, B1 = "a" * 64, "b" * 64, "c" * 64


def prov(scenarios: dict[str, str], orthanc: str = "1.10.1", image: str | None = None, commit: str = "f" * 40,
         backend: str = "local") -> dict:
    program = {"file": "/c/orthanc/app.yaml", "sha256": B1, "backend": backend, "debian": {"orthanc": orthanc}}
    if image:
        program["image"] = image
    return {"format": 1, "clinigym": {"version": "0.1.0", "commit": commit, "dirty": False},
            "scenarios": {k: {"file": f"/s/{k}.yaml", "sha256": h} for k, h in scenarios.items()},
            "programs": {"orthanc": program}, "agent": {"name": "oracle", "options": {}}}


def run_folder(root: Path, name: str, provenance: dict | None) -> Path:
    out = root / name
    (out / "episodes").mkdir(parents=True)
    spec = {"format": 1, "scenarios": ["/s/x.yaml"], "agent": "oracle", "agent_options": {}}
    (out / "run.json").write_text(json.dumps(spec | ({"provenance": provenance} if provenance else {})))
    (out / "summary.json").write_text(json.dumps({"agent": "oracle", "n_tasks": 0}))
    return out


def test_the_same_runs_are_comparable():
    p = prov({"orthanc/x": A1})
    assert comparability("A", p, "B", p) == Comparability([], [])


def test_what_refuses_and_what_is_noted():
    a = prov({"orthanc/x": A1, "orthanc/y": A1}, image="sha256:1111111111111111")
    b = prov({"orthanc/x": A2, "orthanc/z": A1}, orthanc="1.12.0", image="sha256:2222222222222222",
             commit="e" * 40, backend="docker")
    b["programs"]["orthanc"]["sha256"] = A2
    b["programs"]["orthanc"]["npm"] = {"v": "@x/y@1.0.0"}
    assert comparability("A", a, "B", b) == Comparability(
        ["scenario orthanc/x: the scenario files differ (sha256 aaaaaaaaaaaa against bbbbbbbbbbbb)",
         "program orthanc: the program files differ (sha256 cccccccccccc against bbbbbbbbbbbb)",
         "program orthanc: Debian package orthanc 1.10.1 against 1.12.0",
         "program orthanc: Docker image 111111111111 against 222222222222",
         "program orthanc: npm pins None against {'v': '@x/y@1.0.0'}"],
        ["other tasks: only in A: orthanc/y; only in B: orthanc/z",
         "program orthanc: backend local against docker",
         "clinigym 0.1.0 at ffffffffffff against 0.1.0 at eeeeeeeeeeee"])


def test_a_run_without_provenance_cannot_be_told():
    assert comparability("A", prov({"orthanc/x": A1}), "old", None) == Comparability([], [
        "old: no provenance (a run made before clinigym recorded it, or a static run): cannot tell whether the "
        "scenario and program versions match"])


def test_run_folders(tmp_path):
    a = run_folder(tmp_path, "a", prov({"orthanc/x": A1}))
    b = run_folder(tmp_path, "b", prov({"orthanc/x": A2}))
    old = run_folder(tmp_path, "old", None)
    assert read_provenance(a) == prov({"orthanc/x": A1}) and read_provenance(old) is None
    assert check_runs([a, b, a]) == Comparability(
        ["scenario orthanc/x: the scenario files differ (sha256 aaaaaaaaaaaa against bbbbbbbbbbbb)"], [])


def test_compare_refuses_unless_forced(tmp_path, capsys):
    a = run_folder(tmp_path, "a", prov({"orthanc/x": A1}))
    b = run_folder(tmp_path, "b", prov({"orthanc/x": A2}))
    assert main(["compare", str(a), str(b)]) == 4
    out = capsys.readouterr()
    assert out.out == "" and out.err == (
        "error: the runs are not comparable: their scenario or program versions differ:\n"
        "  scenario orthanc/x: the scenario files differ (sha256 aaaaaaaaaaaa against bbbbbbbbbbbb)\n"
        "compare them anyway with --force\n")
    assert main(["compare", str(a), str(b), "--force"]) == 1     # forced: then no episodes to compare
    assert capsys.readouterr().err == (
        "warning: compared with --force, though their scenario or program versions differ:\n"
        "  scenario orthanc/x: the scenario files differ (sha256 aaaaaaaaaaaa against bbbbbbbbbbbb)\n"
        f"no recorded episodes under {a} {b}\n")
    assert main(["compare", str(a), str(a)]) == 1
    assert capsys.readouterr().out == "comparable: the same tasks, scenario files and program versions\n"


def test_runs_on_other_screens_are_noted(tmp_path):
    a = run_folder(tmp_path, "a", prov({"orthanc/x": A1}))
    b = run_folder(tmp_path, "b", prov({"orthanc/x": A1}))
    small = run_folder(tmp_path, "small", prov({"orthanc/x": A1}))
    spec = json.loads((small / "run.json").read_text())
    (small / "run.json").write_text(json.dumps(spec | {"screen": [1280, 800]}))
    assert check_runs([a, b]) == Comparability([], [])       # a run.json without a screen: 1920x1080
    assert check_runs([a, small]) == Comparability([], [f"{a}: screen 1920x1080 against {small}: 1280x800"])
