"""Where programs and scenarios are found: the search path.

Each folder of the search path may hold `containers/<app>/app.yaml` (programs) and
`scenarios/<app>/<id>.yaml` (scenarios) and `scenarios/<app>/families/<name>.yaml` (task
families). In order:

1. the folders of the `CLINIGYM_PATH` environment variable (separated by `:`),
2. folders added at run time (`add_folder`, the CLI's `--path DIR`),
3. the built-in library: in a source checkout the repository's top-level
   `containers/` and `scenarios/`; in an installed wheel the copies the build put
   into the package (`clinigym/_data/`, see setup.py).

A program name or a scenario key found in two folders is an error that names both:
a lab's folder adds programs and scenarios, it never silently replaces one.
"""
from __future__ import annotations

import os
from pathlib import Path

from clinigym.core.errors import SpecError

PACKAGE = Path(__file__).resolve().parents[1]
ENV_VAR = "CLINIGYM_PATH"
_added: list[Path] = []


def builtin_root() -> Path:
    """The folder that holds the built-in `containers/` and `scenarios/`."""
    data = PACKAGE / "_data"
    return data if (data / "containers").is_dir() else PACKAGE.parent


def is_source_checkout() -> bool:
    return builtin_root() == PACKAGE.parent


def add_folder(folder: str | Path) -> None:
    """Add a folder of programs and scenarios to the search path (after CLINIGYM_PATH)."""
    path = Path(folder).expanduser().resolve()
    if not path.is_dir():
        raise SpecError(path, "", "no such folder (a search path folder holds containers/ and/or scenarios/)")
    if path not in _added:
        _added.append(path)


def folders() -> tuple[Path, ...]:
    """The search path, user folders first, each once."""
    found: list[Path] = []
    for raw in os.environ.get(ENV_VAR, "").split(os.pathsep):
        if raw.strip():
            path = Path(raw).expanduser().resolve()
            if not path.is_dir():
                raise SpecError(path, ENV_VAR, "no such folder")
            found.append(path)
    found += _added
    found.append(builtin_root())
    return tuple(dict.fromkeys(found))


def program_files(search: tuple[Path, ...] | None = None) -> dict[str, Path]:
    """Every program's `app.yaml`, by program name (its folder's name)."""
    out: dict[str, Path] = {}
    for folder in search or folders():
        for path in sorted((folder / "containers").glob("*/app.yaml")):
            name = path.parent.name
            if name in out:
                raise SpecError(path, "", f"program {name!r} is also defined in {out[name]}")
            out[name] = path
    return out


def _keyed_files(pattern: str, what: str, search: tuple[Path, ...] | None) -> list[Path]:
    """The files matching `pattern` under each `scenarios/` of the search path, keyed by
    program/stem (the program is the folder under `scenarios/`): one key found twice is an
    error that names both files."""
    seen: dict[str, Path] = {}
    for folder in search or folders():
        root = folder / "scenarios"
        for path in sorted(root.glob(pattern)):
            key = f"{path.relative_to(root).parts[0]}/{path.stem}"
            if key in seen:
                raise SpecError(path, "", f"{what} {key!r} is also defined in {seen[key]}")
            seen[key] = path
    return list(seen.values())


def scenario_files(search: tuple[Path, ...] | None = None) -> list[Path]:
    """Every scenario file, `scenarios/<app>/<id>.yaml`, in search-path then name order."""
    return _keyed_files("*/*.yaml", "scenario", search)


def family_files(search: tuple[Path, ...] | None = None) -> list[Path]:
    """Every family file, `scenarios/<app>/families/<name>.yaml` (`clinigym.spec.task_families`)."""
    return _keyed_files("*/families/*.yaml", "family", search)


def scenario_roots() -> list[Path]:
    """The `scenarios/` folders of the search path."""
    return [folder / "scenarios" for folder in folders()]


def default_scenario_dir(app: str) -> Path:
    """Where a new scenario of `app` is written by default: the built-in library in a source
    checkout, else `scenarios/<app>/` under the current folder (never inside an installed package)."""
    base = builtin_root() if is_source_checkout() else Path.cwd()
    return base / "scenarios" / app
