"""OHIF Viewer 3.13 on the real stack: Orthanc + DICOMweb plugin, serve.py, Debian's
Chromium with software WebGL on Xvfb: no first-visit UI, serve.py's fallback and proxy.
(Every scenario's oracle, random-agent and start-state checks are in test_live.py.)"""
from __future__ import annotations

import ast
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from clinigym.spec.apps import load_app
from clinigym.spec.conditions import Target
from clinigym.spec.scenarios import select

pytestmark = pytest.mark.live
APP = load_app("ohif")
SERVE = APP.folder / "serve.py"
SCENARIOS = select("ohif/*")


@pytest.fixture(scope="module")
def ohif(backends):
    return backends("ohif")


@pytest.fixture(scope="module")
def started(ohif):
    """The program at its pristine state (prepared and started once for the module)."""
    ohif.reset()
    return ohif


def get(url: str, **kw) -> requests.Response:
    with requests.Session() as s:
        s.trust_env = False          # loopback only
        return s.get(url, timeout=10, **kw)


def test_enough_scenarios():
    assert len(SCENARIOS) >= 4
    assert any(st.action == "drag" and st.end_target for s in SCENARIOS for st in s.steps)
    assert all(s.check or s.answer for s in SCENARIOS)   # information tasks are judged on the answer


def test_no_first_visit_ui_at_the_start(started):
    """Neither the onboarding tour nor the investigational-use banner shows."""
    assert started.resolve(Target(selector=".shepherd-element, .shepherd-modal-overlay-container")) is None
    assert "investigational" not in started.devtools.evaluate("document.body.innerText").lower()


# -- serve.py on the live program (real Orthanc behind it) ---------------------------

def test_spa_fallback_and_static_files(started):
    web = f"http://127.0.0.1:{started.ports['web']}"
    index = get(f"{web}/")
    assert index.status_code == 200 and "<title>OHIF Viewer</title>" in index.text
    # The page carries the settle CSS and the render hook, inlined.
    assert "animation-duration: 0s" in index.text and "data-clinigym-image" in index.text
    for route in ("/viewer?StudyInstanceUIDs=1.2.3", "/viewer/dicomweb", "/local", "/a/b.c/d"):
        r = get(web + route)
        assert r.status_code == 200 and r.text == index.text, route
    js = next(p.name for p in (Path(started.variables["NPM_OHIF"]) / "dist").glob("app.bundle.*.js"))
    r = get(f"{web}/{js}", stream=True)
    assert r.status_code == 200 and "javascript" in r.headers["Content-Type"]
    r.close()
    assert get(f"{web}/no-such-bundle.js").status_code == 404
    assert get(f"{web}/assets/nothing.png").status_code == 404
    assert get(f"{web}/../../etc/passwd").status_code in (200, 404)   # normalised: never outside
    assert "root:" not in get(f"{web}/%2e%2e/%2e%2e/etc/passwd").text


def test_proxy_reaches_orthanc_dicomweb(started):
    web = f"http://127.0.0.1:{started.ports['web']}"
    studies = get(f"{web}/dicom-web/studies")
    assert studies.status_code == 200
    names = sorted(s["00100010"]["Value"][0]["Alphabetic"] for s in studies.json())
    assert names == ["PHANTOM^ALICE", "PHANTOM^BOB", "PHANTOM^CAROL"]
    # OHIF asks for several fields in one comma-separated includefield; Orthanc's plugin 1.7
    # needs them split, which the proxy does.
    both = get(f"{web}/dicom-web/studies?includefield=00081030,00080060&PatientName=*BOB*").json()
    assert len(both) == 1 and both[0]["00081030"]["Value"] == ["MR BRAIN PHANTOM"]
    # Retrieve URLs point back at the proxy (same origin as the viewer).
    assert both[0]["00081190"]["Value"][0].startswith(f"{web}/dicom-web/studies/")
    uid = both[0]["0020000D"]["Value"][0]
    series = get(f"{web}/dicom-web/studies/{uid}/series").json()
    meta = get(f"{web}/dicom-web/studies/{uid}/series/{series[0]['0020000E']['Value'][0]}/metadata")
    assert meta.status_code == 200 and len(meta.json()) == 8
    assert get(f"{web}/dicom-web/studies/1.2.3/series").status_code in (200, 204, 404)


def test_serve_binds_loopback_only(started):
    port = started.ports["web"]
    with socket.socket() as s:
        s.settimeout(2)
        with pytest.raises(OSError):
            s.connect(("127.0.0.2", port))      # bound to 127.0.0.1, not to every address
    done = subprocess.run([sys.executable, str(SERVE), "--port", "0", "--bind", "0.0.0.0", "--root", "/",
                           "--config-template", "x", "--config", "y", "--upstream", "http://127.0.0.1:1"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "loopback" in done.stderr


def test_app_config_disables_first_visit_ui(started):
    config = get(f"http://127.0.0.1:{started.ports['web']}/app-config.js").text
    assert (started.state / "app-config.js").read_text() == config     # rendered into the state
    assert "{{" not in config
    assert "'ohif.tours': { $set: [] }" in config
    assert "investigationalUseDialog: { option: 'never' }" in config
    assert "qidoRoot: '/dicom-web'" in config and "https://" not in config
    # And the running viewer agrees: no tour registered, no banner.
    tours = started.devtools.evaluate("JSON.stringify(window.config.customizationService)")
    assert json.loads(tours) == [{"ohif.tours": {"$set": []}}]


def test_serve_is_stdlib_only():
    tree = ast.parse(SERVE.read_text())
    mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert mods <= set(sys.stdlib_module_names) | {"__future__"}, mods - set(sys.stdlib_module_names)
    done = subprocess.run(["python3", str(SERVE), "--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "--upstream" in done.stdout
