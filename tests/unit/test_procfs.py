"""This machine's processes read from /proc: fields after a name with parentheses and
spaces, a process tree, and processes that are gone."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from clinigym.runtime import procfs
from clinigym.runtime.waiting import wait_for


@pytest.fixture
def odd_sleeper(tmp_path):
    """A `sleep` whose name holds ") (" and spaces, the case /proc/PID/stat makes hard, with a child."""
    program = tmp_path / "a) (b c"
    shutil.copy("/bin/sleep", program)
    shell = subprocess.Popen(["/bin/sh", "-c", f"'{program}' 60 & wait"], start_new_session=True)
    wait_for(lambda: len(procfs.tree(shell.pid)) == 2, 10, "the child sleeper")
    yield shell
    os.killpg(shell.pid, 9)
    shell.wait()


def test_stat_reads_the_fields_after_the_name(odd_sleeper):
    [child] = set(procfs.tree(odd_sleeper.pid)) - {odd_sleeper.pid}
    st = procfs.stat(child)
    assert procfs.comm(child) == "a) (b c"
    assert (st.ppid, st.pgid, st.sid) == (odd_sleeper.pid, odd_sleeper.pid, odd_sleeper.pid)
    assert st.state in ("S", "R")
    assert procfs.tree(odd_sleeper.pid) == {odd_sleeper.pid: procfs.stat(odd_sleeper.pid).start,
                                            child: st.start}


def test_this_process():
    st = procfs.stat(os.getpid())
    assert (st.ppid, st.pgid, st.sid) == (os.getppid(), os.getpgid(0), os.getsid(0))
    assert st.state == "R" and int(st.start) > 0
    assert os.getpid() in procfs.pids()


def test_a_process_that_is_gone():
    done = subprocess.Popen(["/bin/true"])
    done.wait()
    assert procfs.stat(done.pid) is None
    assert procfs.comm(done.pid) == ""
    assert procfs.tree(done.pid) == {}
