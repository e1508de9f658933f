"""Shared fixtures and the test tiers.

- `tests/unit/`: pure logic and real files, no X display, no Docker, no root (`make unit`);
- `tests/live/`: the real programs on real X displays, real Chromium, real Orthanc (marked `live`);
- `tests/docker/`: the real Docker engine and images (marked `live` and `docker`).

One live program per app for the whole session (a real Xvfb display and the real
program), closed at the end."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# MedSPOT's annotation files are not part of the repository: their folder is given explicitly
# (.ci/run passes CI's copy), never guessed from where the checkout lies.
MEDSPOT_VAR = "CLINIGYM_MEDSPOT"
TIERS = {"live": ("live",), "docker": ("live", "docker")}
# Fixtures shared by tests of two tiers.
pytest_plugins = ["report_runs"]


def medspot_annotations() -> Path:
    """The folder of MedSPOT's `<Software>_Annotation.json` files, from CLINIGYM_MEDSPOT; a test
    that reads them fails, saying so, when it is not given."""
    from clinigym.spec.medspot import ANNOTATION_SUFFIX
    given = os.environ.get(MEDSPOT_VAR, "")
    if not given:
        pytest.fail(f"{MEDSPOT_VAR} is not set: this test reads MedSPOT's annotations; set it to the folder "
                    f"of their <Software>{ANNOTATION_SUFFIX} files", pytrace=False)
    if not list(Path(given).glob(f"*{ANNOTATION_SUFFIX}")):
        pytest.fail(f"{MEDSPOT_VAR}={given}: no <Software>{ANNOTATION_SUFFIX} file there", pytrace=False)
    return Path(given)


def pytest_collection_modifyitems(config, items):
    for item in items:
        tier = Path(str(item.fspath)).parent.name
        for mark in TIERS.get(tier, ()):
            item.add_marker(getattr(pytest.mark, mark))


def programs(kind: str | None = None):
    """A getter of one running program per app on the backend `kind` (default: the app's
    default backend), every one closed at the end even when closing another fails (no
    display or server is left behind; a failure is raised once all are closed)."""
    from clinigym.runtime.backends import Backend, make_backend
    from clinigym.spec.apps import load_app
    made: dict[str, Backend] = {}
    with contextlib.ExitStack() as closing:
        def get(app: str) -> Backend:
            if app not in made:
                made[app] = make_backend(load_app(app), kind)
                closing.callback(made[app].close)
            return made[app]

        yield get


@pytest.fixture(scope="session")
def backends():
    """One running program per app, on its default backend (local for this machine's
    Debian release, a container for the others)."""
    yield from programs()


def oracle(env):
    """The oracle for an environment: built through its privileged interface."""
    from clinigym.run.runner import agent_for
    return agent_for(env, "oracle")


def displays() -> int:
    """X servers running on this machine (not zombies: PID 1 here does not reap, and a test
    process made a subreaper by an in-process pool reaps adopted orphans only at exit)."""
    states = subprocess.run(["ps", "-C", "Xvfb", "-o", "stat="], capture_output=True, text=True).stdout.split()
    return sum(not s.startswith("Z") for s in states)


def judged(env):
    """The judged record of the environment's last step (privileged: tests and tools only)."""
    from clinigym.envs import ground_truth
    return ground_truth(env).last_record()


def cli(*argv: str) -> int:
    """The `clinigym` command, in this process: its exit status."""
    from clinigym.cli.main import build_parser
    args = build_parser().parse_args(list(argv))
    return args.func(args)


def clinigym(*args, check=True) -> subprocess.CompletedProcess:
    """The `clinigym` command in a process of its own."""
    done = subprocess.run([sys.executable, "-m", "clinigym.cli", *args], capture_output=True, text=True,
                          timeout=600)
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="session")
def modality_files(tmp_path_factory) -> dict[str, list[Path]]:
    """The modality studies (${MODALITIES}) written once, by key: their files in order."""
    from clinigym.runtime.fixtures import MODALITY_STUDIES, write_studies
    folder = tmp_path_factory.mktemp("modalities")
    write_studies(folder, MODALITY_STUDIES)
    return {s.key: sorted((folder / s.key).glob("*.dcm")) for s in MODALITY_STUDIES}
