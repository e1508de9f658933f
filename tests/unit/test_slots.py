"""Numbered work folders and ports: lowest free first, stale ones reclaimed (real folders,
real sockets, real processes)."""
from __future__ import annotations

import socket
import subprocess

import pytest

from clinigym.runtime import slots


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setattr(slots, "ROOT", tmp_path)
    return tmp_path


def test_lowest_free_and_ports(root):
    a = slots.claim("viewer", 3, ["http", "cdp"])
    b = slots.claim("viewer", 3, ["http", "cdp"])
    assert (a.number, a.workdir, a.ports) == (0, root / "clinigym-viewer-0", {"http": 21920, "cdp": 21921})
    assert (b.number, b.ports) == (1, {"http": 21930, "cdp": 21931})
    (a.workdir / "owner").unlink()          # a folder without a live owner is free again
    assert slots.claim("viewer", 3, ["http"]).number == 0


def test_folder_of_a_process_that_is_gone_is_reclaimed(root):
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = root / "clinigym-viewer-0"
    stale.mkdir()
    (stale / "owner").write_text(str(gone.pid))
    (stale / "leftover").write_text("x")
    slot = slots.claim("viewer", 0, [])
    assert slot.number == 0 and not (slot.workdir / "leftover").exists()


def test_live_owner_and_taken_port_skip_the_slot(root):
    live = root / "clinigym-viewer-0"
    live.mkdir()
    with subprocess.Popen(["sleep", "30"]) as proc:
        (live / "owner").write_text(str(proc.pid))
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", slots.PORT_BASE + 10))   # slot 1's first port
            assert slots.claim("viewer", 0, ["http"]).number == 2
        proc.kill()


def test_a_port_in_time_wait_is_free_a_listening_one_is_not(root):
    """The last instance's server closed its connections (TIME_WAIT on its port, 60 s): its
    slot is free again at once, as the server can listen there; a listening port is taken."""
    port = slots.slot_ports(0, 0, ["http"])["http"]
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))
        server.listen()
        with socket.create_connection(("127.0.0.1", port)) as client:
            conn, _ = server.accept()
            conn.close()                      # the server closes first: TIME_WAIT on its side
            client.recv(1)
            assert slots.claim("viewer", 0, ["http"]).number == 1   # still listening: taken
    # The listener is gone; the closed connection stays in TIME_WAIT.
    states = subprocess.run(["ss", "-tanH", f"sport = :{port}"], capture_output=True, text=True).stdout
    assert "TIME-WAIT" in states
    assert slots.claim("viewer", 0, ["http"]).number == 0


def test_a_docker_backend_without_an_engine_claims_no_folder(root, monkeypatch, tmp_path):
    from clinigym.runtime.backends.docker import DockerBackend
    from clinigym.runtime.images import ImageError
    from clinigym.spec.apps import load_app
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-engine.sock'}")
    with pytest.raises(ImageError, match="no Docker engine answers"):
        DockerBackend(load_app("ginkgocadx"))
    assert not list(root.glob("clinigym-ginkgocadx-*"))
