"""Where a run's numbers come from, written into its `run.json` and `summary.json` under
"provenance", so that a published number can be traced and re-run (`clinigym run --like`)
and two runs checked for comparability (`clinigym.eval.compare`):

    clinigym     version, git commit and whether the checkout had changes (null outside a
                 git checkout)
    scenarios    per task (program/id): its file and the file's SHA-256
    programs     per program: its file's SHA-256, the backend it ran on, and its versions:
                 Debian package versions (dpkg-query, local backend), the Docker image id
                 (docker backend; nothing is started to read it), npm and PyPI pins of the
                 program file
    agent        its name, where an agent from outside comes from, all its options (the API
                 key only by its variable's NAME: the key itself is in no option), and what
                 its model server listed for the model (vLLM: `root`, the weights' path)
    seeds        the run's seed and each episode's (by episode number)
    machine      cores, memory, OS release, kernel, Python

The parsers are pure; the rest reads this machine (a few subprocesses, no program started).
"""
from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import clinigym
from clinigym._version import __version__
from clinigym.spec.apps import AppSpec

FORMAT = 1


def sha256_file(path: Path | str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def parse_meminfo(text: str) -> int | None:
    """MemTotal of /proc/meminfo, in bytes."""
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == "MemTotal" and value.split():
            return int(value.split()[0]) * 1024
    return None


def parse_os_release(text: str) -> str | None:
    """PRETTY_NAME of /etc/os-release, unquoted."""
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key == "PRETTY_NAME":
            return value.strip().strip('"').strip("'")
    return None


def parse_dpkg(text: str, packages: Iterable[str]) -> dict[str, str | None]:
    """Versions from `dpkg-query -W -f '${Package}\\t${Version}\\n' PKG...`, by package as
    asked (an architecture-qualified name answers for its package); None: not installed."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, version = line.partition("\t")
        if sep and version:
            found[name.split(":")[0]] = version
    return {p: found.get(p.split(":")[0]) for p in packages}


def pins(app: AppSpec) -> dict[str, Any]:
    """The versions a program file itself pins: npm packages (name@version) and PyPI pins."""
    out: dict[str, Any] = {}
    if app.npm:
        out["npm"] = {key: f"{n.package}@{n.version}" for key, n in sorted(app.npm.items())}
    if app.python:
        out["pypi"] = list(app.python.packages)
    return out


def _run(argv: Sequence[str], cwd: Path | None = None) -> str | None:
    """A command's stdout, or None when it cannot run or fails to answer in time."""
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout


def clinigym_info() -> dict[str, Any]:
    root = Path(clinigym.__file__).resolve().parent.parent
    commit = dirty = None
    if (root / ".git").exists():
        commit = (_run(["git", "rev-parse", "HEAD"], root) or "").strip() or None
        status = _run(["git", "status", "--porcelain", "--untracked-files=no"], root) if commit else None
        dirty = bool(status.strip()) if status is not None else None
    return {"version": __version__, "commit": commit, "dirty": dirty}


def machine() -> dict[str, Any]:
    def read(path: str) -> str:
        try:
            return Path(path).read_text()
        except OSError:
            return ""
    return {"cores": os.cpu_count(), "memory_bytes": parse_meminfo(read("/proc/meminfo")),
            "os": parse_os_release(read("/etc/os-release")), "kernel": platform.release(),
            "python": platform.python_version()}


def _image_id(app: AppSpec) -> str | None:
    """The id of the program's Docker image, when an engine answers (nothing is started)."""
    from clinigym.runtime import images
    try:
        return str(images.engine().images.get(images.app_tag(app)).id)
    except Exception:  # noqa: BLE001 - no engine or no image: unknown, not an error of the run
        return None


def program(app: AppSpec, backend: str) -> dict[str, Any]:
    out: dict[str, Any] = {"file": str(app.folder / "app.yaml"), "sha256": sha256_file(app.folder / "app.yaml"),
                           "backend": backend}
    if backend == "docker":
        out["image"] = _image_id(app)
    elif app.debian_packages:
        text = _run(["dpkg-query", "-W", "-f", "${Package}\t${Version}\n", *app.debian_packages])
        out["debian"] = parse_dpkg(text or "", app.debian_packages)
    return out | pins(app)


def collect(spec: Any, scenarios: Sequence[Any], seeds: dict[int, int], source: str | None = None,
            served: dict[str, Any] | None = None) -> dict[str, Any]:
    """A run's provenance: `spec` its RunSpec, `scenarios` the loaded scenarios, `seeds` each
    planned episode's seed by number, `served` the model server's entry for the model."""
    from clinigym.runtime.backends import default_kind
    from clinigym.spec.apps import load_app
    apps = {s.app: load_app(s.app) for s in scenarios}
    agent: dict[str, Any] = {"name": spec.agent, "options": dict(spec.agent_options)}
    if source:
        agent["source"] = source
    if served is not None:
        agent["model_server"] = served
    return {"format": FORMAT, "clinigym": clinigym_info(),
            "scenarios": {s.key: {"file": str(s.path), "sha256": sha256_file(s.path)} for s in scenarios},
            "programs": {name: program(app, spec.backend or default_kind(app)) for name, app in apps.items()},
            "agent": agent, "mode": spec.mode, "episodes": spec.episodes,
            "seeds": {"run": spec.seed, "episodes": {str(n): s for n, s in sorted(seeds.items())}},
            "machine": machine()}
