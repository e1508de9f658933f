"""This machine's processes read from /proc: fields after a name with parentheses and
spaces, a process tree, and processes that are gone."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

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


# Lines of /proc/PID/task/TID/syscall as the kernel writes them: number, six arguments, sp, pc.
POLL_800 = "7 0x55d0c3a0 0x3 0x320 0x0 0x0 0x0 0x7ffd2c1e8a40 0x7f3b1c2e5b6f"
POLL_FOREVER = "7 0x55d0c3a0 0x3 0xffffffff 0x0 0x0 0x0 0x7ffd2c1e8a40 0x7f3b1c2e5b6f"
EPOLL_600S = "232 0x3 0x7ffd2c1e8a40 0x100 0x927c0 0x0 0x0 0x7ffd2c1e8a40 0x7f3b1c2e5b6f"
READ = "0 0x3 0x7ffd2c1e8a40 0x1000 0x0 0x0 0x0 0x7ffd2c1e8a40 0x7f3b1c2e5b6f"


def test_sleep_bound_reads_the_timer_of_a_poll_or_epoll_wait():
    assert procfs.sleep_bound(POLL_800) == 0.8
    assert procfs.sleep_bound(POLL_FOREVER) is None                        # -1: no timer
    assert procfs.sleep_bound(POLL_FOREVER.replace("0xffffffff", "0xffffffffffffffff")) is None
    assert procfs.sleep_bound(EPOLL_600S) == 600.0
    assert procfs.sleep_bound(EPOLL_600S.replace("232 ", "281 ")) == 600.0   # epoll_pwait
    assert procfs.sleep_bound(READ) is None                                # another call
    assert procfs.sleep_bound("running") == 0.0
    assert procfs.sleep_bound("-1 0x7ffd2c1e8a40 0x7f3b1c2e5b6f") == 0.0   # between calls


def _poller(timeout_ms: int) -> subprocess.Popen:
    """A process whose only thread sleeps in poll() with the given timeout, over and over."""
    code = f"import select, sys\np = select.poll()\nprint(flush=True)\nwhile True: p.poll({timeout_ms})"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    proc.stdout.readline()
    return proc


@pytest.mark.parametrize("timeout_ms, horizon, soon", [(300, 1.0, True), (300, 0.2, False), (-1, 1.0, False)])
def test_wakes_soon_on_a_sleeping_process(timeout_ms, horizon, soon):
    proc = _poller(timeout_ms)
    try:
        # Between its calls the thread runs for a moment: wait until it sleeps in one.
        wait_for(lambda: Path(f"/proc/{proc.pid}/syscall").read_text().startswith("7 "), 10, "poll()")
        assert procfs.wakes_soon(proc.pid, horizon) is soon
    finally:
        proc.kill()
        proc.wait()
    assert procfs.wakes_soon(proc.pid, horizon) is False        # gone: it wakes no more


def test_a_running_process_wakes_soon():
    spinner = subprocess.Popen([sys.executable, "-c", "print(flush=True)\nwhile True: pass"],
                               stdout=subprocess.PIPE)
    spinner.stdout.readline()
    try:
        # It runs, or waits for a core on a busy machine ("-1"): either way, not asleep.
        assert procfs.wakes_soon(spinner.pid, 0.01)
    finally:
        spinner.kill()
        spinner.wait()
