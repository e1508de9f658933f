"""Pinned npm packages: fetched from a registry (here a loopback http.server serving a
tarball built in the test), verified against their SRI integrity, cached atomically."""
from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from clinigym.runtime import npm
from clinigym.runtime.npm import variables as npm_variables
from clinigym.spec.apps import AppSpec, load_app
from clinigym.spec.files import SpecError, parse

NAME, VERSION = "@clinigym/demo", "1.2.3"


def make_tarball(files: dict[str, str], top: str = "package") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def sri(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


class Registry:
    """A registry layout (`@scope/pkg/-/pkg-1.2.3.tgz`) served on 127.0.0.1; counts GETs."""

    def __init__(self, root: Path):
        self.root, self.gets = root, []
        registry = self

        class Handler(SimpleHTTPRequestHandler):
            def do_GET(self):
                registry.gets.append(self.path)
                super().do_GET()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def publish(self, name: str, version: str, tgz: bytes) -> None:
        path = self.root / name / "-" / f"{name.rsplit('/', 1)[-1]}-{version}.tgz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(tgz)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def registry(tmp_path):
    reg = Registry(tmp_path / "registry")
    yield reg
    reg.close()


TGZ = make_tarball({"package.json": json.dumps({"name": NAME, "version": VERSION}),
                    "dist/index.html": "<title>demo</title>", "dist/app.js": "console.log(1)"})


def test_fetch_verifies_extracts_and_caches(registry, tmp_path):
    registry.publish(NAME, VERSION, TGZ)
    cache = tmp_path / "cache"
    dest = npm.fetch(NAME, VERSION, sri(TGZ), registry=registry.url, root=cache)
    assert dest == cache / "@clinigym+demo-1.2.3"
    assert (dest / "dist" / "index.html").read_text() == "<title>demo</title>"
    assert json.loads((dest / "package.json").read_text())["version"] == VERSION
    assert registry.gets == ["/@clinigym/demo/-/demo-1.2.3.tgz"]
    assert sorted(p.name for p in cache.iterdir()) == [dest.name]   # no temporary folder left
    # Present: no second download.
    assert npm.fetch(NAME, VERSION, sri(TGZ), registry=registry.url, root=cache) == dest
    assert len(registry.gets) == 1


def test_integrity_mismatch_is_clear_and_caches_nothing(registry, tmp_path):
    registry.publish(NAME, VERSION, TGZ)
    cache = tmp_path / "cache"
    wrong = sri(b"something else")
    with pytest.raises(npm.NpmError) as err:
        npm.fetch(NAME, VERSION, wrong, registry=registry.url, root=cache)
    msg = str(err.value)
    assert "integrity mismatch" in msg and NAME in msg and wrong in msg and sri(TGZ) in msg
    assert list(cache.iterdir()) == []          # neither the package nor a partial folder
    assert not npm.is_fetched(NAME, VERSION, cache)


def test_missing_package_and_bad_integrity(registry, tmp_path):
    with pytest.raises(npm.NpmError, match="HTTP 404"):
        npm.fetch(NAME, "9.9.9", sri(TGZ), registry=registry.url, root=tmp_path / "c")
    assert list((tmp_path / "c").iterdir()) == []
    with pytest.raises(npm.NpmError, match="SRI"):
        npm.fetch(NAME, VERSION, "md5-abc", registry=registry.url, root=tmp_path / "c")


def test_parallel_fetches_agree(registry, tmp_path):
    registry.publish(NAME, VERSION, TGZ)
    cache = tmp_path / "cache"
    results, errors = [], []

    def run():
        try:
            results.append(npm.fetch(NAME, VERSION, sri(TGZ), registry=registry.url, root=cache))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(results)) == 1
    assert sorted(p.name for p in cache.iterdir()) == ["@clinigym+demo-1.2.3"]
    assert (results[0] / "dist" / "app.js").exists()


def test_unsafe_tarball_is_refused(registry, tmp_path):
    evil = make_tarball({"../escape.txt": "x"})
    registry.publish(NAME, VERSION, evil)
    with pytest.raises(npm.NpmError, match="cannot extract"):
        npm.fetch(NAME, VERSION, sri(evil), registry=registry.url, root=tmp_path / "c")
    assert not (tmp_path / "escape.txt").exists()
    assert list((tmp_path / "c").iterdir()) == []


def test_urls_and_cache_location(monkeypatch, tmp_path):
    assert npm.tarball_url("@ohif/app", "3.13.2") == "https://registry.npmjs.org/@ohif/app/-/app-3.13.2.tgz"
    assert npm.tarball_url("left-pad", "1.3.0", "http://r/") == "http://r/left-pad/-/left-pad-1.3.0.tgz"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert npm.package_dir("@ohif/app", "3.13.2") == tmp_path / "clinigym" / "npm" / "@ohif+app-3.13.2"
    assert npm.parse_integrity("sha1-xx sha512-abc== sha256-def") == ("sha512", "abc==")


APP = {"name": "web", "title": "t", "folder": Path("/nonexistent"),
       "npm": {"ui": {"package": "@x/ui", "version": "1.0.0",
                      "integrity": "sha512-" + "A" * 86 + "=="}},
       "processes": [{"name": "srv", "command": ["python3", "${NPM_UI}/serve.py"]}]}


def test_app_npm_variable_is_known_to_the_validator(monkeypatch, tmp_path):
    spec = parse(AppSpec, APP, Path("web.yaml"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert npm_variables(spec, fetch_missing=False) == {"NPM_UI": str(tmp_path / "clinigym/npm/@x+ui-1.0.0")}
    bad = {**APP, "processes": [{"name": "srv", "command": ["${NPM_OTHER}/x"]}]}
    with pytest.raises(SpecError, match=r"unknown variable \$\{NPM_OTHER\}"):
        parse(AppSpec, bad, Path("web.yaml"))
    loose = {**APP, "npm": {"ui": {**APP["npm"]["ui"], "version": "^1.0.0"}}}
    with pytest.raises(SpecError, match="npm.ui.version"):
        parse(AppSpec, loose, Path("web.yaml"))
    flags = {**APP, "processes": [{"name": "srv", "command": ["x"], "browser_flags": ["--y"]}]}
    with pytest.raises(SpecError, match="browser_flags"):
        parse(AppSpec, flags, Path("web.yaml"))


def test_ohif_pins_its_package():
    pkg = load_app("ohif").npm["ohif"]
    assert (pkg.package, pkg.version) == ("@ohif/app", "3.13.2")
    assert pkg.integrity.startswith("sha512-WZdxmpmG7rqFgW9ZJLcbgr3XCtLi1KDNPoMaeY5PPe6j4G4fjEjjkycZM6C6Zk2F")


def test_cli_fetch_uses_the_cache_without_network(tmp_path):
    # A package already in the cache is not downloaded again (nothing listens on the registry).
    folder = tmp_path / "clinigym" / "npm" / "@ohif+app-3.13.2"
    (folder / "dist").mkdir(parents=True)
    env = {"XDG_CACHE_HOME": str(tmp_path), "CLINIGYM_NPM_REGISTRY": "http://127.0.0.1:9",
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "clinigym.cli", "programs", "--fetch"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"${{NPM_OHIF}} = {folder}" in done.stdout
