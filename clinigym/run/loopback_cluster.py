"""A Ray cluster on this machine that sees only loopback: a head and more nodes (each a
`ray start`), all in one network namespace whose only interface is `lo`, held by a
sleeping process. Ray binds to the machine's external address when it can see one, even
when asked for 127.0.0.1; in this namespace it has none. Commands that talk to the
cluster (a `clinigym run --ray` driver) run in the namespace too (`command`).

Used by the tests and `clinigym bench --throughput`; needs root (`unshare -n`), `nsenter`
and `ip` (util-linux, iproute2)."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from clinigym.core.errors import ClinigymError
from clinigym.runtime.slots import OWNER_ENV
from clinigym.runtime.waiting import poll, wait_for

BIN = Path(sys.executable).parent
PORT = 6390     # the head's port inside the namespace, where nothing else listens
GRACE = 10.0    # seconds the nodes have to end on SIGTERM


def _in_namespace(namespace: str, holder: int) -> list[int]:
    """The processes in network namespace `namespace` but `holder`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != holder:
            with contextlib.suppress(OSError):
                if os.readlink(entry / "ns" / "net") == namespace:
                    found.append(int(entry.name))
    return found


class ClusterError(ClinigymError):
    """The namespace or a Ray node could not be started."""


class LoopbackCluster:
    """`with LoopbackCluster(nodes=2) as cluster:` a head and `nodes - 1` more nodes, each
    with `cpus` CPUs; `cluster.address` for `--ray`, `cluster.command(argv)` to run in it."""

    def __init__(self, nodes: int = 2, cpus: int = 2, object_store_mb: int = 300):
        self.nodes, self.cpus, self.object_store_mb = nodes, cpus, object_store_mb
        self.address = f"127.0.0.1:{PORT}"
        # Not marked as a run's own: a sweep of that run must not take the cluster down.
        self.env = {**{k: v for k, v in os.environ.items() if k != OWNER_ENV}, "RAY_USAGE_STATS_ENABLED": "0"}
        self.holder: subprocess.Popen | None = None
        self.temp: str | None = None

    def __enter__(self) -> LoopbackCluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        self.holder = subprocess.Popen(["unshare", "-n", "sleep", "infinity"])
        wait_for(lambda: self.holder.poll() is not None
                 or os.readlink(f"/proc/{self.holder.pid}/ns/net") != os.readlink("/proc/self/ns/net"),
                 10, "a network namespace of its own")
        if self.holder.poll() is not None:
            raise ClusterError("unshare -n failed: a network namespace needs root")
        self._run(["ip", "link", "set", "lo", "up"])
        self.temp = tempfile.mkdtemp(prefix="ray-")   # short: Ray's socket paths must fit 107 bytes
        common = ["--node-ip-address=127.0.0.1", f"--num-cpus={self.cpus}",
                  f"--object-store-memory={self.object_store_mb * 2**20}", "--disable-usage-stats"]
        self._run([str(BIN / "ray"), "start", "--head", f"--port={PORT}", "--include-dashboard=false",
                   f"--temp-dir={self.temp}", *common])
        for _ in range(self.nodes - 1):
            self._run([str(BIN / "ray"), "start", f"--address={self.address}", *common])

    def command(self, argv: list[str]) -> list[str]:
        """`argv` as a command that runs in the cluster's namespace."""
        assert self.holder is not None, "the cluster is not started"
        return ["nsenter", "-t", str(self.holder.pid), "-n", *argv]

    def _run(self, argv: list[str]) -> None:
        done = subprocess.run(self.command(argv), capture_output=True, text=True, timeout=300, env=self.env)
        if done.returncode != 0:
            raise ClusterError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")

    def close(self) -> None:
        """End every process in the namespace (its nodes; SIGTERM, then SIGKILL after
        `GRACE` s), then the namespace. Not `ray stop`: it would stop every Ray node of the
        machine, another cluster's too."""
        if self.holder is not None and self.holder.poll() is None:
            namespace = os.readlink(f"/proc/{self.holder.pid}/ns/net")
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for pid in _in_namespace(namespace, self.holder.pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, sig)
                if poll(lambda: not _in_namespace(namespace, self.holder.pid), GRACE):
                    break
            self.holder.kill()
            self.holder.wait()
        if self.temp:
            shutil.rmtree(self.temp, ignore_errors=True)
