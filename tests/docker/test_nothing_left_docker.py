"""Nothing left behind on the Docker backend (#40): a user's script that makes an environment,
resets it and then raises, or is killed with SIGKILL, leaves no container, display lock,
process or folder within seconds, without `clinigym cleanup`; and a GNU Health container's
databases go with it (its close commands run in the container before it is removed)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "live"))
from test_nothing_left import gnuhealth_reset, kill_script, script_ends  # noqa: E402


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_script_that_ends_unclosed_leaves_no_container(tmp_path, how):
    watch = script_ends(tmp_path, "docker", how)
    watch.nothing_left(docker=True, timeout=15)


@pytest.mark.slow
def test_a_killed_gnuhealth_container_leaves_no_database(tmp_path):
    proc, watch = gnuhealth_reset(tmp_path, "docker")
    kill_script(proc)
    watch.nothing_left(docker=True, timeout=30)
