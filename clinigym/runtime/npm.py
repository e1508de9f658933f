"""Pinned npm package tarballs, fetched over HTTPS, verified, cached. No npm/node needed.

A program file may ship a web program as an npm package (OHIF Viewer's built
`dist/`). `fetch()` downloads the tarball of one exact version from the
registry, checks it against the pinned `integrity` (SRI: `sha512-<base64>`,
as npm's lock files and `dist.integrity` give it) and extracts it into
`$XDG_CACHE_HOME/clinigym/npm/<name>-<version>/` (`~/.cache` by default;
a scoped name's `/` becomes `+`). The folder is made atomically: extracted
into a temporary folder beside it, then renamed, so parallel runs never see
a half-written package and a failed download leaves nothing behind. An
existing folder is used without any network access. `CLINIGYM_NPM_REGISTRY`
points at another registry (a mirror); the integrity check stays the same.
"""
from __future__ import annotations

import base64
import hashlib
import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from urllib.parse import quote, urlparse

import requests

from clinigym.core.errors import ClinigymError
from clinigym.spec.apps import AppSpec, npm_variable

REGISTRY = "https://registry.npmjs.org"
_ALGORITHMS = ("sha512", "sha384", "sha256")   # strongest first, as npm's ssri picks


class NpmError(ClinigymError):
    """A package that cannot be fetched, verified or extracted."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "clinigym" / "npm"


def folder_name(name: str, version: str) -> str:
    return f"{name.replace('/', '+')}-{version}"


def package_dir(name: str, version: str, root: Path | None = None) -> Path:
    """Where the package is (or will be) extracted."""
    return (root or cache_root()) / folder_name(name, version)


def tarball_url(name: str, version: str, registry: str | None = None) -> str:
    """`<registry>/@scope/pkg/-/pkg-1.2.3.tgz`, the layout of registry.npmjs.org."""
    registry = (registry or os.environ.get("CLINIGYM_NPM_REGISTRY") or REGISTRY).rstrip("/")
    base = name.rsplit("/", 1)[-1]
    return f"{registry}/{quote(name, safe='@/')}/-/{quote(base)}-{quote(version)}.tgz"


def parse_integrity(integrity: str) -> tuple[str, str]:
    """The strongest supported `(algorithm, base64 digest)` of an SRI string."""
    found = {}
    for token in integrity.split():
        algo, _, digest = token.partition("-")
        if algo in _ALGORITHMS and digest:
            found.setdefault(algo, digest.split("?", 1)[0])
    for algo in _ALGORITHMS:
        if algo in found:
            return algo, found[algo]
    raise NpmError(f"integrity {integrity!r} has no {'/'.join(_ALGORITHMS)} hash (SRI format: "
                   "sha512-<base64>)")


def is_fetched(name: str, version: str, root: Path | None = None) -> bool:
    return package_dir(name, version, root).is_dir()


def fetch(name: str, version: str, integrity: str, *, registry: str | None = None,
          root: Path | None = None, timeout: float = 60.0) -> Path:
    """The extracted package folder of `name@version`, downloaded and verified if missing."""
    dest = package_dir(name, version, root)
    if dest.is_dir():
        return dest
    algo, expected = parse_integrity(integrity)
    url = tarball_url(name, version, registry)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{folder_name(name, version)}.tmp-"))
    try:
        tgz = tmp / "package.tgz"
        got = _download(url, tgz, algo, timeout)
        if got != expected:
            raise NpmError(f"npm {name}@{version}: integrity mismatch for {url}: expected "
                           f"{algo}-{expected}, got {algo}-{got}; nothing was cached")
        top = _extract(tgz, tmp / "x", f"{name}@{version}")
        try:
            os.rename(top, dest)
        except OSError:
            if not dest.is_dir():   # not a parallel run that finished first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _download(url: str, path: Path, algo: str, timeout: float) -> str:
    """Stream `url` into `path`; returns the base64 digest of what was written."""
    session = requests.Session()
    # Loopback (a test registry) never goes through a proxy; the real registry may.
    session.trust_env = urlparse(url).hostname not in ("127.0.0.1", "localhost", "::1")
    digest = hashlib.new(algo)
    try:
        with session.get(url, stream=True, timeout=timeout) as resp:
            if resp.status_code != 200:
                raise NpmError(f"GET {url}: HTTP {resp.status_code}")
            with open(path, "wb") as out:
                for chunk in resp.iter_content(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
    except requests.RequestException as exc:
        raise NpmError(f"GET {url}: {exc}") from None
    finally:
        session.close()
    return base64.b64encode(digest.digest()).decode()


def _data_members(tar: tarfile.TarFile, into: Path) -> list[tarfile.TarInfo]:
    """The members, refused as the "data" filter refuses them: absolute or escaping paths,
    links that point outside, devices and other special files."""
    root = into.resolve()
    for m in tar.getmembers():
        target = (root / m.name).resolve()
        if m.name.startswith("/") or not target.is_relative_to(root):
            raise tarfile.TarError(f"{m.name!r} would be extracted outside the destination")
        if m.issym() or m.islnk():
            link = (target.parent / m.linkname if m.issym() else root / m.linkname).resolve()
            if m.linkname.startswith("/") or not link.is_relative_to(root):
                raise tarfile.TarError(f"{m.name!r} links outside the destination")
        elif not (m.isfile() or m.isdir()):
            raise tarfile.TarError(f"{m.name!r} is a special file")
    return tar.getmembers()


def _extract(tgz: Path, into: Path, what: str) -> Path:
    """Extract safely (no absolute paths, links out or devices); returns the package's
    top folder (`package/` in npm tarballs)."""
    into.mkdir()
    try:
        with tarfile.open(tgz, "r:gz") as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(into, filter="data")
            else:   # a Python without extraction filters (Debian 12's 3.11.2): the same rules, checked here
                tar.extractall(into, members=_data_members(tar, into))
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise NpmError(f"npm {what}: cannot extract the tarball: {exc}") from None
    tops = list(into.iterdir())
    if len(tops) != 1 or not tops[0].is_dir():
        raise NpmError(f"npm {what}: expected one top folder in the tarball, found "
                       f"{sorted(p.name for p in tops)}")
    return tops[0]


def variables(app: AppSpec, fetch_missing: bool = True) -> dict[str, str]:
    """${NPM_<KEY>} of every npm package of the program; fetched now if missing."""
    return {npm_variable(k): str(fetch(p.package, p.version, p.integrity) if fetch_missing
                                 else package_dir(p.package, p.version))
            for k, p in app.npm.items()}
