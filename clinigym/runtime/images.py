"""Docker images without a registry: Debian base images by debootstrap, one image per program.

Layers: `clinigym/base:<release>` (debootstrap minbase + `docker import`), then
`clinigym/<app>` built from containers/Dockerfile (or containers/<app>/Dockerfile
when a program needs its own) with the program's `debian_packages` from its
app.yaml: the same list the host installs for the local backend, so the two
cannot drift. The Debian mirror is read from the host's apt configuration,
never written into the repository.

Caching: every image carries a label with the hash of its inputs (release,
mirror, Dockerfile text, package lists, parent image id); an image whose label
matches is not rebuilt.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from clinigym.core.errors import ClinigymError
from clinigym.spec import paths
from clinigym.spec.apps import AppSpec

# The display stack inside every image: the Makefile's host packages, but no VNC server
# (the live view runs on the host, on the shared X socket), plus python3 for the
# supervisor (clinigym/runtime/backends/supervisor.py).
DISPLAY_PACKAGES = ("python3", "xvfb", "x11-utils", "openbox", "fonts-dejavu-core", "procps",
                    "ca-certificates")
KEY_LABEL = "org.clinigym.inputs"
APT_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))


class ImageError(ClinigymError):
    pass


@dataclass(frozen=True)
class Mirrors:
    """Where the host's apt gets Debian from: the main archive and the security archive."""
    archive: str
    security: str | None

    def sources_list(self, release: str) -> str:
        lines = [f"deb {self.archive} {release} main", f"deb {self.archive} {release}-updates main"]
        if self.security:
            lines.append(f"deb {self.security} {release}-security main")
        return "\n".join(lines) + "\n"


def _source_entries(paths=APT_SOURCES) -> list[tuple[str, list[str]]]:
    """(URI, suites) of every enabled `deb` entry, one-line and deb822 formats."""
    entries = []
    files = []
    for p in paths:
        files += sorted(p.glob("*")) if p.is_dir() else ([p] if p.exists() else [])
    for f in files:
        text = f.read_text(errors="replace")
        if f.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields = {}
                for line in stanza.splitlines():
                    if line.startswith("#") or ":" not in line:
                        continue
                    k, v = line.split(":", 1)
                    fields[k.strip().lower()] = v.split()
                if "deb" in fields.get("types", []) and fields.get("enabled", ["yes"]) != ["no"]:
                    entries += [(uri, fields.get("suites", [])) for uri in fields.get("uris", [])]
        elif f.suffix == ".list" or f.name == "sources.list":
            for line in text.splitlines():
                parts = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
                if len(parts) >= 3 and parts[0] == "deb":
                    entries.append((parts[1], [parts[2]]))
    return entries


def host_mirrors(paths=APT_SOURCES) -> Mirrors:
    archive = security = None
    for uri, suites in _source_entries(paths):
        if any(s.endswith("-security") or "/updates" in s for s in suites):
            security = security or uri.rstrip("/")
        elif suites:
            archive = archive or uri.rstrip("/")
    if archive is None:
        raise ImageError("no Debian archive found in the host's apt sources "
                         f"({', '.join(map(str, APT_SOURCES))})")
    return Mirrors(archive, security)


def engine():
    """A client of the local Docker engine, or a clear error when none answers."""
    import docker
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except Exception as exc:  # the SDK raises several types for "no engine"
        raise ImageError(f"no Docker engine answers ({exc}); start one with `make engine`") from None
    return client


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _current(client, tag: str, key: str):
    import docker
    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    return image if image.labels.get(KEY_LABEL) == key else None


def base_tag(release: str) -> str:
    return f"clinigym/base:{release}"


def app_tag(app: AppSpec) -> str:
    return f"clinigym/{app.name}:latest"


def build_base(release: str, log=print, force: bool = False) -> str:
    """debootstrap --variant=minbase + docker import; returns the image id."""
    client = engine()
    mirrors = host_mirrors()
    key = _digest("base", release, mirrors.archive, mirrors.security or "", _debootstrap_version())
    tag = base_tag(release)
    if not force and (image := _current(client, tag, key)):
        log(f"{tag}: up to date")
        return image.id
    log(f"{tag}: debootstrap {release} (minbase) from the host's mirror")
    root = Path(tempfile.mkdtemp(prefix=f"clinigym-{release}-"))
    try:
        done = subprocess.run(["debootstrap", "--variant=minbase", release, str(root), mirrors.archive],
                              capture_output=True, text=True)
        if done.returncode:
            raise ImageError(f"debootstrap {release} failed: {done.stdout[-1500:]}{done.stderr[-1500:]}")
        (root / "etc/apt/sources.list").write_text(mirrors.sources_list(release))
        # Image size and rebuild noise: no apt lists or caches in the base layer.
        shutil.rmtree(root / "var/lib/apt/lists", ignore_errors=True)
        (root / "var/lib/apt/lists/partial").mkdir(parents=True)
        tar = subprocess.Popen(["tar", "-C", str(root), "--numeric-owner", "-c", "."],
                               stdout=subprocess.PIPE)
        done = subprocess.run(["docker", "import", "--change", f"LABEL {KEY_LABEL}={key}",
                               "--change", 'CMD ["bash"]', "-", tag], stdin=tar.stdout,
                              capture_output=True, text=True)
        tar.wait()
        if done.returncode or tar.returncode:
            raise ImageError(f"docker import {tag} failed: {done.stderr[-1500:]}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return client.images.get(tag).id


def _debootstrap_version() -> str:
    done = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "debootstrap"],
                          capture_output=True, text=True)
    if done.returncode:
        raise ImageError("debootstrap is not installed (apt-get install debootstrap)")
    return done.stdout


def dockerfile(app: AppSpec) -> Path:
    own = app.folder / "Dockerfile"
    return own if own.exists() else paths.builtin_root() / "containers" / "Dockerfile"


def build_app(app: AppSpec, log=print, force: bool = False) -> str:
    client = engine()
    base_id = build_base(app.release, log)
    path = dockerfile(app)
    packages = " ".join(app.debian_packages)
    display = " ".join(DISPLAY_PACKAGES)
    key = _digest("app", base_id, path.read_text(), packages, display)
    tag = app_tag(app)
    if not force and (image := _current(client, tag, key)):
        log(f"{tag}: up to date")
        return image.id
    log(f"{tag}: building from {path} on {base_tag(app.release)}")
    with tempfile.TemporaryDirectory(prefix="clinigym-context-") as ctx:
        shutil.copy(path, Path(ctx) / "Dockerfile")
        image, _ = _build(client, ctx, tag, {"BASE": base_tag(app.release), "PACKAGES": packages,
                                              "DISPLAY_PACKAGES": display}, {KEY_LABEL: key})
    return image.id


def _build(client, context: str, tag: str, buildargs: dict, labels: dict):
    import docker
    try:
        return client.images.build(path=context, tag=tag, buildargs=buildargs, labels=labels,
                                   network_mode="host", rm=True, forcerm=True)
    except docker.errors.BuildError as exc:
        tail = "".join(str(c.get("stream", c.get("error", ""))) for c in exc.build_log)[-2000:]
        raise ImageError(f"building {tag} failed: {exc.msg}\n{tail}") from None
