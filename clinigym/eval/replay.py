"""Replaying a recorded live episode, and whether it reproduces.

The recorded actions are executed again on the live program from a fresh reset. Per
action we compare the live observation before the action with the recorded
`step-NNN-before.png` (`clinigym.eval.similarity`, with the scenario's `wall_clock`
boxes left out, as `clinigym validate` does), and the live outcome (`hit`, `correct`,
`transition_seen`, `failure`: the environment's judged record, read through its
privileged interface) with the recorded one. A task family's episode replays on the instance
its header names (`instance`, `split`), re-created from the family and that seed.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clinigym.core.recording_schema import StepRecord
from clinigym.eval.similarity import DEFAULT_THRESHOLD, Similarity, load_rgb, similarity, wall_clock_mask

if TYPE_CHECKING:   # the live stack is imported only when something runs
    from clinigym.runtime.backends import Backend
    from clinigym.spec.scenarios import Scenario
    from clinigym.spec.task_families import Family


@dataclass(frozen=True)
class Outcome:
    hit: bool | None
    correct: bool | None
    transition_seen: bool | None
    failure: str | None

    @classmethod
    def of(cls, record: StepRecord) -> Outcome:
        return cls(record.hit, record.correct, record.transition_seen, record.failure)

    def describe(self) -> str:
        if self.correct:
            return "correct"
        transition = {True: "transition", False: "no transition", None: "-"}[self.transition_seen]
        return f"{self.failure or 'incorrect'} ({'hit' if self.hit else 'miss'}, {transition})"


@dataclass(frozen=True)
class StepReplay:
    index: int                      # the action's number in the episode (step-NNN files)
    step: int                       # the scenario step it was judged against
    similarity: Similarity | None   # live screen before the action vs the recorded one
    matches: bool
    outcome_same: bool
    recorded: Outcome
    live: Outcome | None            # None: the live episode had already ended
    note: str | None = None


@dataclass
class ReplayReport:
    episode: str
    scenario: str
    threshold: float
    instance: int | None = None     # a task family's instance
    steps: list[StepReplay] = field(default_factory=list)

    @property
    def all_match(self) -> bool:
        return bool(self.steps) and all(s.matches and s.outcome_same for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "all_match": self.all_match}


def find_task(key: str, path: str | None = None) -> Scenario | Family:
    """A scenario or task family: its file when `path` names one that exists, else the one of
    key `key` on the search path (a recording made on another checkout)."""
    from clinigym.spec.scenarios import all_scenarios
    from clinigym.spec.task_families import all_families, load_task
    file = Path(path or "")
    if file.suffix in (".yaml", ".yml") and file.exists():
        return load_task(file)
    found: list[Scenario | Family] = [s for s in all_scenarios() if s.key == key]
    found += [f for f in all_families() if f.key == key]
    if not found:
        raise ValueError(f"no scenario or task family {key!r}")
    return found[0]


def episode_start(task: Scenario | Family, seed: int | None, instance: int | None,
                  split: str | None) -> tuple[int | None, str | None]:
    """The reset seed and split that re-create a recorded task: a family's instance and split (a
    reset without a seed drew the instance at random), else `seed` and no split."""
    from clinigym.spec.task_families import Family
    if not isinstance(task, Family):
        return seed, None
    if instance is None:
        raise ValueError(f"{task.key} is a task family: its instance (seed) is needed to re-create the task")
    return instance, split


def _action(record: StepRecord) -> Any:
    # `action` is the parsed form; when the agent's output did not parse it is null and
    # the raw output is replayed, so that the live environment rejects it the same way.
    return record.action if record.action is not None else record.raw_action


def replay_episode(folder: Path, backend: Backend | None = None,
                   threshold: float = DEFAULT_THRESHOLD) -> ReplayReport:
    """Re-execute the episode's actions on its live program from a fresh reset.
    `backend`: a running backend of the episode's program to share (not closed here)."""
    from clinigym.envs import ground_truth
    from clinigym.envs.steps import StepsEnv
    from clinigym.recording import read_episode

    episode = read_episode(Path(folder))
    header = episode.header
    if header.backend == "static":
        raise ValueError(f"{folder}: a static (keyframe) episode has no live program to replay on")
    task = find_task(header.scenario, header.scenario_path)
    seed, split = episode_start(task, header.seed, header.instance, header.split)
    obs_size = tuple(header.coordinates["observation_size"])
    # max_actions is not recorded; allowing exactly the recorded actions lets a long
    # recovery-mode episode replay in full and changes nothing else we compare.
    env = StepsEnv(task, backend=backend, observation_size=obs_size, recovery=header.recovery,
                   max_actions=len(episode.steps) or None, split=split)
    truth = ground_truth(env)
    report = ReplayReport(str(episode.folder), task.key, threshold, seed if env.family else None)
    try:
        obs, _ = env.reset(seed=seed)
        clock = wall_clock_mask(env.scenario, env.coords)
        ended = False
        for i, record in enumerate(episode.steps):
            recorded = Outcome.of(record)
            if ended:
                report.steps.append(StepReplay(i, record.step, None, False, False, recorded, None,
                                               "the live episode had already ended"))
                continue
            expected = load_rgb(episode.folder / record.before)
            note = None
            if expected.shape != obs["screenshot"].shape:
                sim = None
                note = (f"recorded frame is {expected.shape[1]}x{expected.shape[0]}, "
                        f"live is {obs_size[0]}x{obs_size[1]}")
            else:
                sim = similarity(expected, obs["screenshot"], clock)
            obs, _, terminated, truncated, info = env.step(_action(record))
            live_record = truth.last_record()
            live = Outcome.of(live_record)
            if truncated and live_record.truncated_reason:
                note = live_record.truncated_reason
            report.steps.append(StepReplay(i, record.step, sim, sim is not None and sim.matches(threshold),
                                           live == recorded, recorded, live, note))
            ended = terminated or truncated
    finally:
        env.close()
    return report


def format_report(report: ReplayReport) -> str:
    verdict = "all match" if report.all_match else "DIFFERS"
    task = report.scenario if report.instance is None else f"{report.scenario} instance {report.instance}"
    lines = [f"{Path(report.episode).name}  {task}  {len(report.steps)} actions  {verdict}",
             f"{'action':>6} {'identical':>10} {'MAD':>7}  {'screen':<6}  {'recorded':<40} {'live':<40} outcome"]
    for s in report.steps:
        ident = f"{s.similarity.identical:.6f}" if s.similarity else "-"
        mad = f"{s.similarity.mad:.3f}" if s.similarity else "-"
        live = s.live.describe() if s.live else "-"
        lines.append(f"{s.index:>6} {ident:>10} {mad:>7}  {'match' if s.matches else 'DIFF':<6}  "
                     f"{s.recorded.describe():<40} {live:<40} {'same' if s.outcome_same else 'DIFF'}"
                     + (f"  ({s.note})" if s.note else ""))
    return "\n".join(lines)
