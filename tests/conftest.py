"""Shared fixtures: one live program per app for the whole session (a real Xvfb
display and the real program), closed at the end."""
from __future__ import annotations

import pytest

from clinigym.apps import load_app
from clinigym.backends.local import LocalBackend


@pytest.fixture(scope="session")
def backends():
    made: dict[str, LocalBackend] = {}

    def get(app: str) -> LocalBackend:
        if app not in made:
            made[app] = LocalBackend(load_app(app))
        return made[app]

    yield get
    for backend in made.values():
        backend.close()
