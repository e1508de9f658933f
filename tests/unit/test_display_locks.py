"""Display numbers for containers: reserved with X lock files, never twice at once (real
files, real threads, real processes)."""
from __future__ import annotations

import subprocess
import threading

import pytest

from clinigym.runtime.backends import docker as backend


@pytest.fixture
def locks(tmp_path, monkeypatch):
    monkeypatch.setattr(backend, "LOCK_DIR", tmp_path)
    monkeypatch.setattr(backend, "X11_DIR", tmp_path / ".X11-unix")
    (tmp_path / ".X11-unix").mkdir()
    return tmp_path


def test_threads_reserving_at_once_get_different_numbers(locks):
    # CI once gave two environments started side by side the same display.
    numbers = []
    start = threading.Barrier(8)

    def reserve():
        start.wait()
        numbers.append(backend.reserve_display())
    threads = [threading.Thread(target=reserve) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(numbers)) == 8
    for n in numbers:
        assert int((locks / f".X{n}-lock").read_text()) > 0
        backend.release_display(n)
    assert not list(locks.glob(".X*-lock"))


def test_a_lock_without_a_process_id_is_not_taken(locks):
    # Empty or unreadable: something else is writing it, so it is not stale.
    first = backend.reserve_display()
    backend.release_display(first)
    (locks / f".X{first}-lock").write_text("")
    assert backend.reserve_display() == first + 1


def test_a_lock_whose_process_is_gone_is_taken(locks):
    gone = subprocess.Popen(["true"])
    gone.wait()
    first = backend.reserve_display()
    backend.release_display(first)
    (locks / f".X{first}-lock").write_text(f"{gone.pid:>10}\n")
    assert backend.reserve_display() == first
