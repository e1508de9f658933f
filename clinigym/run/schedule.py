"""What a run is and how its episodes are shared out: pure logic, no I/O.

A run's episodes are numbered up front, in the order one process runs them (program by
program, in the order the programs first appear; each scenario's episodes together), so
an episode's folder number, seed and outcome do not depend on how many workers run it.
A worker runs a chunk (consecutive episodes of one program) on one program instance and
keeps that instance for its next chunk when it is of the same program.
"""
from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

PIECES = 32   # chunks per worker of a pool run (next_chunk shares them out)


@dataclass(frozen=True)
class RunSpec:
    """Everything a run was asked to do; stored in its folder, so `--resume` needs only it."""
    scenarios: tuple[str, ...]            # scenario files, in the order given
    agent: str
    agent_options: dict[str, Any] = field(default_factory=dict)
    episodes: int = 1
    seed: int = 0
    mode: str = "steps"
    recovery: bool = False                # the steps mode
    budget: int | None = None             # the plan and goal modes
    backend: str | None = None
    search_path: tuple[str, ...] = ()     # folders of programs and scenarios added to the built-in ones
    audit: str = "per_step"               # the plan and goal modes: when the safety audit runs
    observation: str = "screenshot"       # what the agent observes (clinigym.envs.observations)
    screen: tuple[int, int] = (1920, 1080)  # the virtual screen's width and height in pixels
    split: str | None = None              # task families: the split their instances draw from

    def to_json(self) -> dict[str, Any]:
        return {"format": 1, **asdict(self), "scenarios": list(self.scenarios),
                "search_path": list(self.search_path), "screen": list(self.screen)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSpec:
        """From run.json; what else it holds (its provenance) is not the spec's."""
        known = {f.name for f in dataclasses.fields(cls)}
        # a run.json from before the per-step audit was audited at the end
        fields = {"audit": "end"} | {k: v for k, v in data.items() if k in known}
        return cls(**{**fields, "scenarios": tuple(fields["scenarios"]),
                      "search_path": tuple(fields.get("search_path", ())),
                      "screen": tuple(fields.get("screen", cls.screen))})

    def summary_fields(self) -> dict[str, Any]:
        """What `summary.json` says about the run besides its scores."""
        return {"agent": self.agent, "episodes": self.episodes, "seed": self.seed, "mode": self.mode,
                "observation": self.observation,
                # another screen than the default is said (its scores are not the default's)
                **({"screen": "x".join(map(str, self.screen))} if self.screen != RunSpec.screen else {}),
                **({"split": self.split} if self.split else {}),
                **({"recovery": self.recovery} if self.mode == "steps"
                   else {"budget": self.budget, "audit": self.audit})}


class ScenarioRef(NamedTuple):
    path: str
    key: str      # app/id
    app: str


@dataclass(frozen=True)
class Planned:
    """One episode of a run."""
    number: int       # its folder's number, 1-based in run order
    path: str         # the scenario file
    key: str
    app: str
    episode: int      # which repeat of its scenario, from 0
    seed: int


@dataclass(frozen=True)
class Chunk:
    """Consecutive episodes of one program, run by one worker on one program instance."""
    app: str
    episodes: tuple[Planned, ...]


def episode_seed(seed: int, key: str, episode: int) -> int:
    # Each scenario and episode gets its own seed (a random agent must not click the same
    # point in every scenario), reproducible from the run's seed.
    return zlib.crc32(f"{seed}/{key}/{episode}".encode())


def plan_episodes(scenarios: Sequence[ScenarioRef], episodes: int, seed: int) -> list[Planned]:
    """Every scenario `episodes` times, numbered in run order: program by program (in the
    order each first appears), scenarios in the order given, each one's episodes together."""
    by_app: dict[str, list[ScenarioRef]] = {}
    for s in scenarios:
        by_app.setdefault(s.app, []).append(s)
    order = [(s, ep) for refs in by_app.values() for s in refs for ep in range(episodes)]
    return [Planned(i, s.path, s.key, s.app, ep, episode_seed(seed, s.key, ep))
            for i, (s, ep) in enumerate(order, 1)]


def split(items: Sequence[Planned], k: int) -> list[tuple[Planned, ...]]:
    """`items` in `k` consecutive pieces whose sizes differ by at most one (larger first)."""
    size, extra = divmod(len(items), k)
    pieces, start = [], 0
    for i in range(k):
        end = start + size + (1 if i < extra else 0)
        pieces.append(tuple(items[start:end]))
        start = end
    return pieces


def partition(planned: Sequence[Planned], workers: int) -> list[Chunk]:
    """The episodes as chunks: one per program for a single worker (each program started
    once, as one process would); for more, pieces of at most `ceil(episodes / (workers x
    PIECES))` consecutive episodes of one program, so that a worker whose program has no
    work left takes a share of another's and none idles while the last chunk runs."""
    by_app: dict[str, list[Planned]] = {}
    for p in planned:
        by_app.setdefault(p.app, []).append(p)
    if workers <= 1:
        return [Chunk(app, tuple(items)) for app, items in by_app.items()]
    size = max(1, math.ceil(len(planned) / (workers * PIECES)))
    return [Chunk(app, piece) for app, items in by_app.items() for piece in split(items, math.ceil(len(items) / size))]


def next_chunk(remaining: Sequence[Chunk], app: str | None, running: Mapping[str, int] | None = None) -> int:
    """The index of the chunk a worker whose program instance is `app` takes next: the first
    of the same program (its instance is reused), else the first of the program with the
    most episodes left per worker on it (`running`: how many workers run each program now),
    the first program on a tie."""
    same = [i for i, c in enumerate(remaining) if c.app == app]
    if same:
        return same[0]
    left: dict[str, int] = {}
    for c in remaining:
        left[c.app] = left.get(c.app, 0) + len(c.episodes)
    running = running or {}
    best = max(left, key=lambda a: left[a] / (1 + running.get(a, 0)))
    return next(i for i, c in enumerate(remaining) if c.app == best)
