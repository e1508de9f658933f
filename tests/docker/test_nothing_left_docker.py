"""Nothing left behind on the Docker backend (#40): a user's script that makes an environment,
resets it and then raises, or is killed with SIGKILL, leaves no container, display lock,
process or folder within seconds, without `clinigym cleanup`; and a GNU Health container's
databases go with it (its close commands run in the container before it is removed)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "live"))
from test_nothing_left import PY, Watch, _gnuhealth_databases, script_ends, start  # noqa: E402


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_script_that_ends_unclosed_leaves_no_container(tmp_path, how):
    watch = script_ends(tmp_path, "docker", how)
    watch.nothing_left(docker=True, timeout=15)


GNUHEALTH_SCRIPT = """
import sys
from clinigym.runtime.backends import make_backend
from clinigym.spec.apps import load_app
backend = make_backend(load_app("gnuhealth"), "docker")
backend.reset()
print("reset", flush=True)
sys.stdin.read()
"""


@pytest.mark.slow
def test_a_killed_gnuhealth_container_leaves_no_database(tmp_path):
    (tmp_path / "script.py").write_text(GNUHEALTH_SCRIPT)
    proc = start([PY, "script.py"], tmp_path)
    watch = Watch(proc.pid)
    try:
        assert proc.stdout.readline().strip() == "reset", proc.stdout.read()
        watch.look()
        assert _gnuhealth_databases(watch.gnuhealth_ports), watch
        proc.kill()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stdin.close()
    watch.nothing_left(docker=True, timeout=30)
