"""What a soak's run left, judged (`clinigym.bench.soak`): every planned episode scored or an
infrastructure error, the oracle's metrics over the scored ones (100%), the faults that
explain each retry and error, lost steps, runner crashes, leftovers and memory. Pure reading
of the run folder and of what the injector recorded."""
from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from PIL import Image

from clinigym.core.errors import DataError
from clinigym.eval.scoring import infrastructure_ended, score_dirs
from clinigym.recording import episode_folders, read_episode
from clinigym.recording.writer import episode_number
from clinigym.run.resume import read_errors

FLAT_MB = 300.0     # growth of used memory (last tenth against the second) still called flat


class Injected(Protocol):
    kind: str
    running: int | None
    next: int | None


@dataclass
class Verdict:
    planned: int
    succeeded: int = 0
    failed: dict[int, str] = field(default_factory=dict)        # episode number -> its reason ("" if none)
    endings: dict[str, int] = field(default_factory=dict)       # failed episodes by status ("error": no recording)
    missing: list[int] = field(default_factory=list)            # planned, neither scored nor an infrastructure error
    unexplained: list[int] = field(default_factory=list)        # failed with no fault injected into it
    faults: dict[str, dict[str, int]] = field(default_factory=dict)   # kind -> landed, absorbed, unattributed
    scored: int = 0                                             # episodes in the metrics
    infrastructure_errors: list[int] = field(default_factory=list)   # in no metric: ended by faults after retries
    retried: dict[int, int] = field(default_factory=dict)      # episode number -> its retries
    metrics: dict[str, float | None] = field(default_factory=dict)   # the oracle's, over the scored episodes
    steps: int = 0
    lost_steps: list[str] = field(default_factory=list)
    unfinished_lines: int = 0                                   # step lines cut short by a kill
    crashes: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    memory: dict[str, float | bool | None] = field(default_factory=dict)

    @property
    def scored_failures(self) -> list[int]:
        """Scored episodes that did not succeed: the oracle's own, or a fault charged to it."""
        return sorted(set(self.failed) - set(self.infrastructure_errors))

    @property
    def problems(self) -> list[str]:
        found = []
        if self.crashes:
            found.append(f"runner crashed: {'; '.join(self.crashes)}")
        if self.missing:
            found.append(f"{len(self.missing)} episodes are neither scored nor an infrastructure error: "
                         f"{self.missing[:10]}")
        if no_reason := [n for n, why in self.failed.items() if not why]:
            found.append(f"{len(no_reason)} failed episodes have no reason: {no_reason[:10]}")
        if self.unexplained:
            found.append(f"{len(self.unexplained)} episodes failed with no fault injected: {self.unexplained[:10]}")
        if failures := self.scored_failures:
            found.append(f"{len(failures)} scored episodes did not succeed: {failures[:10]}")
        if short := {k: v for k, v in self.metrics.items() if v is not None and v < 1.0}:
            found.append("the oracle's metrics over the scored episodes are not 100%: " +
                         ", ".join(f"{k.upper()} {100 * v:.1f}%" for k, v in short.items()))
        if self.lost_steps:
            found.append(f"{len(self.lost_steps)} finished steps lost: {self.lost_steps[:5]}")
        if self.leftovers:
            found.append(f"{len(self.leftovers)} things left behind: {self.leftovers[:5]}")
        if self.memory.get("flat") is False:
            found.append(f"memory grew {self.memory['growth_mb']:.0f} MB")
        return found

    @property
    def counts(self) -> str:
        """The endings in one line, for the soak's table."""
        return (f"scored {self.scored} (oracle: " +
                ", ".join(f"{k.upper()} {'-' if v is None else f'{100 * v:.1f}%'}" for k, v in self.metrics.items())
                + f"), infrastructure errors {len(self.infrastructure_errors)}, retried "
                  f"{len(self.retried)} episodes ({sum(self.retried.values())} retries)")


def check_run(out: Path, planned: int, returncode: int | None, injections: Sequence[Injected],
              leftovers: list[str], memory: Sequence[tuple[float, int, float]]) -> Verdict:
    v = Verdict(planned, leftovers=list(leftovers), memory=memory_trend([m[2] for m in memory]))
    if returncode not in (0, 1):   # 1: the run ended with its summary, with infrastructure errors
        v.crashes.append(f"the run ended with status {returncode}")
    if not (out / "summary.json").exists():
        v.crashes.append("the run wrote no summary.json")
    ended: set[int] = set()
    for folder in episode_folders(out / "episodes") if (out / "episodes").is_dir() else []:
        number = episode_number(folder)
        assert number is not None   # the run names every folder
        v.steps += check_steps(folder, v)
        try:
            ep = read_episode(folder)
        except DataError as exc:
            v.lost_steps.append(str(exc))
            continue
        if retries := ep.header.extra.get("extra", {}).get("retries"):
            v.retried[number] = len(retries)
        if ep.outcome is None:
            continue               # cut off: its error (or nothing) says more
        if infrastructure_ended(ep):
            v.infrastructure_errors.append(number)
        else:
            ended.add(number)      # scored
        if ep.status == "complete" and all(s.correct for s in ep.steps) and len(ep.steps) == ep.header.n_steps:
            v.succeeded += 1
        else:
            v.failed[number] = ep.outcome.reason or (ep.steps[-1].truncated_reason if ep.steps else None) or ""
            v.endings[ep.status] = v.endings.get(ep.status, 0) + 1
    for error in read_errors(out):
        if error.number not in v.failed:
            v.failed[error.number] = error.error
            v.endings["error"] = v.endings.get("error", 0) + 1
        if error.cause is not None and error.number not in v.infrastructure_errors:
            v.infrastructure_errors.append(error.number)
    v.infrastructure_errors.sort()
    v.scored = len(ended)
    v.missing = [n for n in range(1, planned + 1) if n not in ended and n not in v.infrastructure_errors]
    summary, _ = score_dirs([out / "episodes"]) if (out / "episodes").is_dir() else ({}, [])
    v.metrics = {k: summary.get(k) for k in ("tca", "s1a", "shr", "wps_norm")}
    attributed: dict[int, list[str]] = {}
    for i in injections:
        target = i.running if i.running is not None else i.next
        counts = v.faults.setdefault(i.kind, {"injected": 0, "landed": 0, "absorbed": 0, "unattributed": 0})
        counts["injected"] += 1
        if target is None:
            counts["unattributed"] += 1
            continue
        attributed.setdefault(target, []).append(i.kind)
        counts["landed" if target in v.failed or target in v.retried else "absorbed"] += 1
    v.unexplained = sorted(n for n in v.failed if n not in attributed)
    return v


def check_steps(folder: Path, v: Verdict) -> int:
    """Every finished step of a recording (a whole line of steps.jsonl) with its screenshots
    readable; what is not goes to `v.lost_steps`. Returns the finished steps."""
    try:
        text = (folder / "steps.jsonl").read_text(encoding="utf-8")
    except OSError as exc:
        v.lost_steps.append(f"{folder.name}: {exc}")
        return 0
    lines = text.split("\n")
    if lines[-1]:
        v.unfinished_lines += 1     # no newline yet: the step did not finish
    finished = lines[:-1]
    for n, line in enumerate(finished):
        where = f"{folder.name} step line {n + 1}"
        try:
            step = json.loads(line)
        except ValueError:
            v.lost_steps.append(f"{where}: not JSON")
            continue
        for image in (step.get("before"), step.get("after")):
            if image is None:
                continue
            try:
                with Image.open(folder / image) as im:
                    im.verify()
            except Exception as exc:  # noqa: BLE001 - any unreadable image is a lost step
                v.lost_steps.append(f"{where}: {image}: {exc}")
    return len(finished)


def memory_trend(used_mb: Sequence[float]) -> dict[str, float | bool | None]:
    """Used memory of the second tenth of the samples (after warm-up) against the last."""
    if len(used_mb) < 10:
        return {"samples": len(used_mb), "start_mb": None, "end_mb": None, "growth_mb": None, "flat": None}
    tenth = len(used_mb) // 10
    start = statistics.median(used_mb[tenth:2 * tenth])
    end = statistics.median(used_mb[-tenth:])
    growth = end - start
    return {"samples": len(used_mb), "start_mb": round(start, 1), "end_mb": round(end, 1),
            "growth_mb": round(growth, 1), "flat": growth <= max(FLAT_MB, 0.1 * start)}
