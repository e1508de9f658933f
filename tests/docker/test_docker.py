"""The Docker backend on the real engine and the real images (`make images` builds them):
programs in containers give the same step outcomes as on this machine, crashes truncate
and reset heals, leftovers are cleaned up, no bridge network, and the live view shows
the program in a real Chromium."""
from __future__ import annotations

import base64
import io
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from clinigym.bench.faults import in_container
from clinigym.cli import main as cli
from clinigym.core.errors import SpecError
from clinigym.envs.steps import StepsEnv
from clinigym.recording import read_episode
from clinigym.runtime.backends.docker import LABEL, SupervisorError
from clinigym.runtime.backends.local import LocalBackend
from clinigym.runtime.images import Mirrors, build_app, engine, host_mirrors
from clinigym.runtime.liveview import LiveView
from clinigym.runtime.waiting import wait_for
from clinigym.spec.apps import load_app
from clinigym.spec.scenarios import all_scenarios, select
from conftest import judged, oracle, programs
from subset import representative

pytestmark = pytest.mark.live
HOST_APPS = ["orthanc", "dicomscope", "aeskulap", "ohif", "gnuhealth"]   # programs on both backends


@pytest.fixture(scope="module")
def containers():
    yield from programs("docker")


def oracle_outcomes(scenario, backend) -> list[tuple]:
    env = StepsEnv(scenario, backend=backend)
    agent = oracle(env)
    obs, info = env.reset(seed=0)
    outcomes = []
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        record = judged(env)
        outcomes.append((record.step, record.correct, record.failure))
        if terminated or truncated:
            env.close()
            return outcomes + [("complete", info["end_reason"] == "completed")]


@pytest.mark.parametrize("scenario", representative(s for s in all_scenarios() if s.app in HOST_APPS))
def test_same_step_outcomes_on_both_backends(scenario, containers):
    """Every step correct and the task complete in the container: exactly the outcomes
    test_live.py asserts for the same scenarios on the local backend."""
    expected = [(i, True, None) for i in range(len(scenario.steps))] + [("complete", True)]
    assert oracle_outcomes(scenario, containers(scenario.app)) == expected


@pytest.mark.parametrize("kind", ["local", "docker"])
def test_cpu_seconds_are_the_programs_own(kind, backends, containers):
    """The program's CPU counter (its processes and display, or its container) grows by a
    JVM's start and barely moves while nothing is drawn."""
    backend = backends("dicomscope") if kind == "local" else containers("dicomscope")
    before = backend.cpu_seconds() if backend.display else 0.0
    backend.reset()
    started = backend.cpu_seconds()
    assert started > 0.2 and (kind == "local" or started > before + 0.2)   # a JVM start takes more
    backend.display.tracker().poll(1.0)     # a second, or less when something is drawn
    assert 0 <= backend.cpu_seconds() - started < 0.2


def test_crash_truncates_and_reset_recovers(containers, tmp_path):
    backend = containers("dicomscope")
    env = StepsEnv(select("dicomscope")[0], backend=backend, record_dir=tmp_path)
    agent = oracle(env)
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
    assert reward == 1.0 and not (terminated or truncated)
    backend.kill()   # the program in the container dies
    obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
    assert truncated and reward == 0.0 and "exited" in info["end_reason"] and "exited" in judged(env).truncated_reason
    rec = read_episode(next(tmp_path.iterdir()))
    assert len(rec.steps) == 2 and rec.status == "truncated"
    container = backend.container.id
    obs, info = env.reset(seed=0)    # restarted in the same container
    assert backend.container.id == container
    assert env.step(agent.act(obs, info))[1] == 1.0
    env.close()


def test_killed_container_truncates_and_reset_recreates_it(containers):
    backend = containers("dicomscope")
    env = StepsEnv(select("dicomscope")[0], backend=backend)
    agent = oracle(env)
    obs, info = env.reset(seed=0)
    old = backend.container
    old.kill()        # the whole container is gone: display, supervisor and program
    obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
    assert truncated and "does not answer" in info["end_reason"]
    obs, info = env.reset(seed=0)
    assert backend.container.id != old.id and backend.restart_reason
    assert env.step(agent.act(obs, info))[1] == 1.0
    env.close()


def test_a_stopped_program_in_a_container_truncates_with_its_reason(containers):
    """SIGSTOP to the program's process group in the container (found from the host, as the
    soak finds it), past the settle timeout: the step ends truncated, the reset recovers."""
    backend = containers("dicomscope")
    env = StepsEnv(select("dicomscope")[0], backend=backend)
    agent = oracle(env)
    obs, info = env.reset(seed=0)
    backend.container.reload()
    target = in_container(0, backend.container)
    assert len(target.groups) == 1 and target.xvfb is not None
    os.killpg(target.groups[0], signal.SIGSTOP)
    try:
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
    finally:
        os.killpg(target.groups[0], signal.SIGCONT)
    assert truncated and not terminated
    assert info["end_reason"] == "the program stopped: dicomscope stopped by a signal (SIGSTOP): it cannot run"
    obs, info = env.reset(seed=0)
    assert env.step(agent.act(obs, info))[1] == 1.0
    env.close()


def test_wedged_display_is_replaced_by_a_new_container(containers):
    backend = containers("dicomscope")
    backend.reset()
    old = backend.container.id
    backend.container.exec_run(["pkill", "-KILL", "Xvfb"])
    assert "display is gone" in wait_for(backend.dead, 10, "the supervisor to see Xvfb exit")
    backend.reset()
    assert backend.container.id != old and backend.dead() is None


def test_supervisor_reports_a_bad_command(containers, tmp_path):
    backend = containers("dicomscope")
    backend.reset()
    with pytest.raises(SupervisorError, match="FileNotFoundError"):
        backend._spawn("nothing", ["/no/such/program"], "/", {"PATH": "/usr/bin"}, tmp_path / "log")


def test_environments_side_by_side(tmp_path):
    """Two environments of one program at once, each with its own container and display."""
    scenario = select("dicomscope")[0]
    envs = [StepsEnv(scenario, backend="docker") for _ in range(2)]
    results = [None, None]

    def run(i):
        results[i] = oracle_outcomes(scenario, envs[i].backend)
    try:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert envs[0].backend.number != envs[1].backend.number
        assert results[0] == results[1] and results[0][-1] == ("complete", True)
    finally:
        for env in envs:
            env.close()


def test_containers_use_no_bridge_network(containers):
    containers("dicomscope").reset()
    containers("orthanc").reset()
    client = engine()
    started = {c.labels[f"{LABEL}.app"]: c for c in client.containers.list(filters={"label": LABEL})}
    # A program with ports shares the host's namespace (its services bind loopback);
    # one without gets no network at all.
    assert started["orthanc"].attrs["HostConfig"]["NetworkMode"] == "host"
    assert started["dicomscope"].attrs["HostConfig"]["NetworkMode"] == "none"
    for c in started.values():
        assert c.attrs["HostConfig"]["NetworkMode"] in ("host", "none"), c.name
    # dockerd runs with --bridge=none: no bridge network exists at all
    assert {n.name for n in client.networks.list()} <= {"host", "none"}


def test_cleanup_removes_the_containers_of_a_killed_run(tmp_path):
    code = ("import os, signal\n"
            "from clinigym.spec.apps import load_app\n"
            "from clinigym.runtime.backends import make_backend\n"
            "b = make_backend(load_app('dicomscope'), 'docker')\n"
            "b.reset()\n"
            "print(b.container_name, b.number, flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr
    name, number = done.stdout.split()
    client = engine()
    assert client.containers.get(name).status == "running"   # left behind by the killed run
    out = io.StringIO()
    from contextlib import redirect_stdout
    with redirect_stdout(out):
        assert cli(["cleanup", "--json"]) == 0
    assert name in json.loads(out.getvalue())
    assert not client.containers.list(all=True, filters={"name": name})
    assert not Path(f"/tmp/.X{number}-lock").exists()


def test_cleanup_keeps_containers_of_live_runs(containers):
    backend = containers("dicomscope")
    backend.reset()
    from clinigym.runtime.backends.docker import cleanup
    assert backend.container_name not in cleanup()
    assert backend.dead() is None


def test_novnc_page_shows_the_program(containers):
    from playwright.sync_api import sync_playwright
    backend = containers("dicomscope")
    frame = backend.reset()
    with LiveView(backend.number) as view, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(view.url)
        page.wait_for_function("() => { const c = document.querySelector('#noVNC_container canvas');"
                               " return c && c.width === 1920 && c.height === 1080; }", timeout=20000)
        # Wait until the framebuffer has been drawn (not the initial blank canvas).
        page.wait_for_function("() => { const c = document.querySelector('#noVNC_container canvas');"
                               " const d = c.getContext('2d').getImageData(0, 0, 400, 300).data;"
                               " for (let i = 0; i < d.length; i += 4) if (d[i] > 40) return true;"
                               " return false; }", timeout=20000)
        data = page.evaluate("() => document.querySelector('#noVNC_container canvas').toDataURL('image/png')")
        browser.close()
    assert not view._workdir.exists()      # closed: its password file and logs are gone too
    shown = np.asarray(Image.open(io.BytesIO(base64.b64decode(data.split(",", 1)[1]))).convert("RGB"),
                       dtype=np.int16)
    truth = frame.rgb.astype(np.int16)
    assert shown.shape == truth.shape
    # VNC may compress lossily: the picture must match closely, not bit for bit.
    assert np.abs(shown - truth).mean() < 6 and truth.std() > 10


def test_image_build_is_cached():
    logs: list[str] = []
    first = build_app(load_app("dicomscope"), log=logs.append)
    second = build_app(load_app("dicomscope"), log=logs.append)
    assert first == second and logs[-1].endswith("up to date")


def test_local_backend_refuses_a_program_of_another_release():
    with pytest.raises(SpecError, match="release: itksnap needs Debian bullseye.*--backend docker"):
        LocalBackend(load_app("itksnap"))


def test_mirrors_from_deb822_and_one_line_sources(tmp_path):
    d = tmp_path / "sources.list.d"
    d.mkdir()
    (d / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n\nTypes: deb\nURIs: http://mirror.example/debian-security/\n"
        "Suites: bookworm-security\nComponents: main\n")
    (tmp_path / "sources.list").write_text("# deb http://other.example/debian bookworm main\n")
    mirrors = host_mirrors((tmp_path / "sources.list", d))
    assert mirrors == Mirrors("http://mirror.example/debian", "http://mirror.example/debian-security")
    assert mirrors.sources_list("bullseye") == (
        "deb http://mirror.example/debian bullseye main\n"
        "deb http://mirror.example/debian bullseye-updates main\n"
        "deb http://mirror.example/debian-security bullseye-security main\n")
    (tmp_path / "one.list").write_text("deb [arch=amd64] http://one.example/debian bookworm main\n")
    assert host_mirrors((tmp_path / "one.list",)) == Mirrors("http://one.example/debian", None)
