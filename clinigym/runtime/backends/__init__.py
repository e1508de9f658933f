"""Where a program runs: `local` (this machine) or `docker` (a container per environment).

The default is the `CLINIGYM_BACKEND` environment variable, else `local` for a
program of this machine's Debian release and `docker` for the others. A program file
may name the backends it runs on (`backends:`); another one is refused.
"""
from __future__ import annotations

import os

from clinigym.core.errors import SpecError
from clinigym.runtime.backends.base import Backend, ProgramDied
from clinigym.runtime.display import Geometry
from clinigym.spec.apps import AppSpec

KINDS = ("local", "docker")
__all__ = ["KINDS", "Backend", "ProgramDied", "default_kind", "make_backend"]


def default_kind(app: AppSpec) -> str:
    from clinigym.runtime.backends.local import host_release
    chosen = os.environ.get("CLINIGYM_BACKEND")
    if chosen and chosen in app.backends:
        return chosen
    if len(app.backends) == 1:
        return app.backends[0]
    return "local" if app.release == host_release() else "docker"


def make_backend(app: AppSpec, kind: str | None = None, geometry: Geometry = Geometry(),
                 accessibility: bool = False) -> Backend:
    """`accessibility`: run the program with its accessibility bridge, for `Backend.elements()`."""
    kind = kind or default_kind(app)
    if kind in KINDS and kind not in app.backends:
        raise SpecError(app.folder / "app.yaml", "backends", f"{app.name} runs on {', '.join(app.backends)} only, "
                                                             f"not {kind}")
    if accessibility and app.accessibility is None:
        raise SpecError(app.folder / "app.yaml", "accessibility", f"{app.name} has no accessibility source")
    if kind not in KINDS:
        raise SpecError("backend", kind, f"unknown backend; known: {', '.join(KINDS)}")
    if kind == "local":
        from clinigym.runtime.backends.local import LocalBackend
        backend: Backend = LocalBackend(app, geometry)
    else:
        from clinigym.runtime.backends.docker import DockerBackend
        backend = DockerBackend(app, geometry)
    backend.accessibility = accessibility
    return backend
