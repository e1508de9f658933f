"""Starting a `clinigym run` from a test and watching it (what it started: `Footprint`)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from clinigym.bench.footprint import Footprint
from clinigym.runtime.waiting import wait_for

BOUND = 20.0    # seconds a stopped run may take to close everything and exit


def start(scenarios: list[Path], *args: str) -> subprocess.Popen:
    """`clinigym run` of the oracle in a process group of its own (as from a terminal)."""
    return subprocess.Popen([sys.executable, "-m", "clinigym.cli", "run", "--scenario", *map(str, scenarios),
                             "--agent", "oracle", "--no-progress", *args], start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def statuses(out: Path) -> list[str | None]:
    """Per episode folder: "ended" when its recording has an outcome, else None."""
    found = []
    for folder in sorted((out / "episodes").glob("*")) if (out / "episodes").exists() else []:
        try:
            found.append("ended" if json.loads((folder / "episode.json").read_text()).get("outcome") else None)
        except (OSError, ValueError):
            found.append(None)
    return found


def wait_mid_episode(proc: subprocess.Popen, out: Path, footprint: Footprint, finished: int = 0,
                     displays: int = 2) -> None:
    """Until an episode is under way (and `finished` have ended), every worker's display up."""
    def ready() -> bool:
        assert proc.poll() is None, proc.communicate()
        footprint.record()
        s = statuses(out)
        return None in s and s.count("ended") >= finished and footprint.displays() >= displays
    wait_for(ready, 180, "an episode under way")


