"""A program's own Python packages (a program that ships on PyPI, such as GNU Health), pinned
in its file and installed into a virtualenv of its own: `${VENV}` in the program file.

The virtualenv is `$XDG_CACHE_HOME/clinigym/venvs/<app>-<hash>/` (`~/.cache` by default),
the hash taken over the pinned list and the Python that makes it, so that changing a pin
makes a new one and never alters a virtualenv a running program uses. It is made by
Debian's `python3 -m venv` (with `--system-site-packages` when the program needs Debian's
bindings, such as PyGObject for a GTK client) and pip, under a lock, and counts as made
only once a marker file is written last: a failed or interrupted install is made again.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from clinigym.core.errors import ClinigymError
from clinigym.spec.apps import AppSpec

PYTHON = "/usr/bin/python3"   # Debian's: its site packages hold the system bindings
MARKER = ".clinigym-complete"


class PyEnvError(ClinigymError):
    """A program's virtualenv that cannot be made."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "clinigym" / "venvs"


def venv_dir(app: AppSpec, root: Path | None = None) -> Path:
    assert app.python is not None
    key = "\n".join([PYTHON, str(app.python.system_site_packages), *app.python.packages])
    return (root or cache_root()) / f"{app.name}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def is_made(app: AppSpec, root: Path | None = None) -> bool:
    return (venv_dir(app, root) / MARKER).exists()


def ensure(app: AppSpec, root: Path | None = None, timeout: float = 900) -> Path:
    """The program's virtualenv, made first if missing (pip reaches PyPI once)."""
    path = venv_dir(app, root)
    if is_made(app, root):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # another process may be making it: wait for it
        if is_made(app, root):
            return path
        shutil.rmtree(path, ignore_errors=True)
        assert app.python is not None
        make = [PYTHON, "-m", "venv", *(["--system-site-packages"] if app.python.system_site_packages else []),
                str(path)]
        pip = [str(path / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", *app.python.packages]
        for cmd in (make, pip):
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise PyEnvError(f"{app.name}: {' '.join(cmd[:3])}: {exc}") from exc
            if done.returncode:
                raise PyEnvError(f"{app.name}: {' '.join(cmd[:3])} failed ({done.returncode}): "
                                 f"{(done.stderr or done.stdout)[-800:]}")
        (path / MARKER).write_text("\n".join(app.python.packages) + "\n")
    return path


def variables(app: AppSpec, make_missing: bool = True) -> dict[str, str]:
    """`${VENV}` for a program with Python packages (made if missing); nothing for the others."""
    if app.python is None:
        return {}
    return {"VENV": str(ensure(app) if make_missing else venv_dir(app))}
