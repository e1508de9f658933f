"""Shared fixtures: one live program per app for the whole session (a real Xvfb
display and the real program), closed at the end."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from clinigym.apps import load_app
from clinigym.backends import Backend, make_backend


# MedSPOT's annotation files: shared/ lies beside the repository (here and in CI);
# CLINIGYM_MEDSPOT points elsewhere.
ANNOTATIONS = Path(os.environ.get(
    "CLINIGYM_MEDSPOT", Path(__file__).resolve().parents[1].parent / "shared" / "medspot" / "annotations"))


@pytest.fixture(scope="session")
def backends():
    """One running program per app, on its default backend (local for this machine's
    Debian release, a container for the others)."""
    made: dict[str, Backend] = {}

    def get(app: str) -> Backend:
        if app not in made:
            made[app] = make_backend(load_app(app))
        return made[app]

    yield get
    for backend in made.values():
        backend.close()
