"""Shared fixtures and the test tiers.

- `tests/unit/`: pure logic and real files, no X display, no Docker, no root (`make unit`);
- `tests/live/`: the real programs on real X displays, real Chromium, real Orthanc (marked `live`);
- `tests/docker/`: the real Docker engine and images (marked `live` and `docker`).

One live program per app for the whole session (a real Xvfb display and the real
program), closed at the end."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# MedSPOT's annotation files: shared/ lies beside the repository (here and in CI);
# CLINIGYM_MEDSPOT points elsewhere.
ANNOTATIONS = Path(os.environ.get("CLINIGYM_MEDSPOT", REPO.parent / "shared" / "medspot" / "annotations"))
TIERS = {"live": ("live",), "docker": ("live", "docker")}


def pytest_collection_modifyitems(config, items):
    for item in items:
        tier = Path(str(item.fspath)).parent.name
        for mark in TIERS.get(tier, ()):
            item.add_marker(getattr(pytest.mark, mark))


@pytest.fixture(scope="session")
def backends():
    """One running program per app, on its default backend (local for this machine's
    Debian release, a container for the others)."""
    from clinigym.runtime.backends import Backend, make_backend
    from clinigym.spec.apps import load_app
    made: dict[str, Backend] = {}

    def get(app: str) -> Backend:
        if app not in made:
            made[app] = make_backend(load_app(app))
        return made[app]

    yield get
    for backend in made.values():
        backend.close()


def oracle(env):
    """The oracle for an environment: built through its privileged interface."""
    from clinigym.run.runner import agent_for
    return agent_for(env, "oracle")


def judged(env):
    """The judged record of the environment's last step (privileged: tests and tools only)."""
    from clinigym.envs import ground_truth
    return ground_truth(env).last_record()
