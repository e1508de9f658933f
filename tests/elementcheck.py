"""Shared by the live and Docker tests of accessibility trees: run a scenario's first steps
under the oracle with accessibility on, and at each step find the program's own element
that the step's target is on, by role and name (tests/live/test_elements_live.py,
tests/docker/test_elements_docker.py)."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from clinigym.core.elements import Element, Selector, Tree
from clinigym.core.geometry import Coordinates
from clinigym.runtime.a11y.bus import bus_processes
from clinigym.runtime.procfs import comm
from clinigym.runtime.slots import OWNER_ENV

# A step's expectation: a selector that names exactly one element, or a check of its own
# (an element found another way: a table row by one of its cells).
Find = Selector | Callable[[Tree, tuple[int, int]], list[Element]]


@dataclass
class Walk:
    reads_ms: list[float] = field(default_factory=list)   # the first screen's reads
    found: list[Element] = field(default_factory=list)    # per step
    bus_folder: Path | None = None
    bus_owners: dict[int, str | None] = field(default_factory=dict)   # the buses' processes: their owner mark
    bus_comms: set[str] = field(default_factory=set)
    nodes: int = 0


def walk_scenario(scenario: str, steps: list[Find], backend: str | None = None, reads: int = 5) -> Walk:
    """Reset `scenario` with accessibility on; for each of its first `len(steps)` steps read
    the tree, find the step's element and check that it holds the target's centre, then do
    the oracle's action. The environment is closed at the end; its buses must be gone then."""
    from clinigym.agents.oracle import OracleAgent
    from clinigym.envs.base import ground_truth
    from clinigym.envs.steps import StepsEnv
    env = StepsEnv(scenario, backend=backend)
    env.backend.accessibility = True
    out = Walk()
    try:
        obs, info = env.reset()
        c = info["coordinates"]
        coords = Coordinates(*c["observation_size"], *c["screen_size"])
        truth = ground_truth(env)
        agent = OracleAgent(truth)
        out.bus_folder = env.backend.a11y.bus.folder if env.backend.a11y.bus else None
        for i, find in enumerate(steps):
            target = truth.target()
            assert target is not None, f"{scenario}: no step {i + 1}"
            tree = _read(env.backend, coords, out.reads_ms if i == 0 else [], reads if i == 0 else 1)
            if i == 0:
                out.nodes = len(tree)
            x, y = target.center
            found = find(tree, (x, y)) if callable(find) else tree.find(find)
            assert len(found) == 1, f"{scenario} step {i + 1}: {find} found {len(found)}:\n{tree.to_text()}"
            assert found[0].box is not None and found[0].box.contains(x, y), \
                f"{scenario} step {i + 1}: {found[0].role} {found[0].name!r} at {found[0].box} does not hold {target}"
            out.found.append(found[0])
            if out.bus_folder is not None:
                for pid in bus_processes(out.bus_folder):
                    out.bus_owners[pid] = _owner(pid)
                    out.bus_comms.add(comm(pid))
            obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
            assert not (terminated and i < len(steps) - 1) and not truncated, f"{scenario} ended at step {i + 1}"
    finally:
        env.close()
    return out


def _read(backend, coords: Coordinates, times: list[float], n: int) -> Tree:
    for _ in range(n):
        start = time.perf_counter()
        tree = backend.elements()
        times.append((time.perf_counter() - start) * 1000)
    assert tree.truncated is None, f"the read hit a cap: {tree.truncated}"
    return tree.to_obs(coords)


def row_with_cell(role: str, cell: str) -> Callable[[Tree, tuple[int, int]], list[Element]]:
    """The elements of `role` (a table row) that hold an element named `cell`."""
    def find(tree: Tree, point: tuple[int, int]) -> list[Element]:
        return [e for e in tree.find(Selector(role=role)) if any(d.name == cell for d in e.walk())]
    return find


def opaque_at(role: str) -> Callable[[Tree, tuple[int, int]], list[Element]]:
    """An opaque widget: the smallest element at the point, an unnamed `role` without children."""
    def find(tree: Tree, point: tuple[int, int]) -> list[Element]:
        at = [e for e in tree.walk() if e.box is not None and e.box.contains(*point)]
        smallest = min(at, key=lambda e: e.box.area, default=None)
        return [smallest] if smallest and smallest.role == role and not smallest.name and not smallest.children else []
    return find


def _owner(pid: int) -> str | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    mark = f"{OWNER_ENV}=".encode()
    return next((e[len(mark):].decode() for e in env if e.startswith(mark)), None)


def nothing_left(folder) -> list[int]:
    """The processes that still run on a closed bus's folder."""
    return bus_processes(folder)
