"""The `clinigym` command on the real programs."""
import json

import pytest

from conftest import clinigym

KEYS = {"tca", "s1a", "shr", "shr_attempted", "wps", "wps_norm", "n_tasks", "failures", "per_app"}




def test_apps_lists_runnable_programs():
    rows = {r["name"]: r for r in json.loads(clinigym("programs", "--json").stdout)}
    assert {"orthanc", "dicomscope", "aeskulap", "itksnap", "ginkgocadx"} <= set(rows)
    # Programs of this machine's release run here; Debian 11 programs only in containers.
    assert all(r["runnable"] == (r["release"] == "bookworm") for r in rows.values())
    packages = clinigym("programs", "--packages").stdout.split()
    assert "orthanc" in packages and "itksnap" not in packages and "ginkgocadx" not in packages


@pytest.mark.live
def test_run_then_score(tmp_path):
    out = tmp_path / "run"
    done = clinigym("run", "--scenario", "orthanc/open-patient-study", "--agent", "oracle",
                    "--out", str(out), "--no-progress")
    assert "orthanc" in done.stdout and "100.0%" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert KEYS <= set(summary)
    assert summary["tca"] == 1.0 and summary["n_tasks"] == 1 and summary["errors"] == []
    scored = json.loads(clinigym("score", str(out), "--json").stdout)
    assert scored["tca"] == 1.0 and scored["per_app"]["orthanc"]["n_tasks"] == 1


