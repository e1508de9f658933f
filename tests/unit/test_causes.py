"""How an episode ends (docs/concepts.md): the cause of each ending, which deaths are the
infrastructure's, and the infrastructure's endings left out of every metric but counted.
Real recordings written by the recorder; exact values."""
from __future__ import annotations

import signal

import numpy as np

from clinigym.core.recording_schema import EpisodeHeader, EpisodeOutcome, StepRecord
from clinigym.envs.base import END_BUDGET, end_cause
from clinigym.eval.scoring import format_table, score_dirs
from clinigym.recording.writer import new_episode, numbered
from clinigym.runtime.backends.base import KILLED, Death

SCREEN = np.zeros((4, 6, 3), np.uint8)


def test_only_a_kill_or_a_termination_from_outside_is_the_infrastructures():
    assert KILLED == {-signal.SIGKILL, -signal.SIGTERM, 128 + signal.SIGKILL, 128 + signal.SIGTERM} \
        == {-9, -15, 137, 143}
    for code in (0, 1, 2, -signal.SIGSEGV, -signal.SIGABRT, 128 + signal.SIGSEGV, -signal.SIGINT):
        assert code not in KILLED


def test_a_death_is_the_reason_as_recorded_with_whose_it_is():
    death = Death("itksnap exited with status -9", infrastructure=True)
    assert death == "itksnap exited with status -9" and death.infrastructure
    assert f"the program stopped: {death}" == "the program stopped: itksnap exited with status -9"


def test_each_ending_has_its_cause():
    killed = Death("orthanc exited with status -9", infrastructure=True)
    crashed = Death("dicomscope exited with status 1", infrastructure=False)
    assert end_cause(EpisodeOutcome("truncated", reason=killed), killed) == "infrastructure"
    assert end_cause(EpisodeOutcome("truncated", reason=crashed), crashed) == "agent"
    assert end_cause(EpisodeOutcome("truncated", reason=END_BUDGET), None) == "budget"
    assert end_cause(EpisodeOutcome("complete", 2, 2), None) == "agent"
    assert end_cause(EpisodeOutcome("failed", 0, 1), None) == "agent"
    # a reason without the backend's word (a target not found) is not taken for a fault
    assert end_cause(EpisodeOutcome("truncated", reason="step 2: target not found"),
                     "step 2: target not found") == "agent"


def _episode(out, number: int, outcome: EpisodeOutcome, correct: bool) -> None:
    with numbered(number):
        rec = new_episode(out, f"orthanc-s{number}", EpisodeHeader(scenario=f"orthanc/s{number}", app="orthanc",
                                                                   overview="", n_steps=1, coordinates={}))
    rec.step(StepRecord(step=0, instruction="", expected_action="click", raw_action=None, action=None,
                        correct=correct), SCREEN, SCREEN)
    rec.finish(outcome)


def test_the_infrastructures_endings_are_in_no_metric_and_counted(tmp_path):
    _episode(tmp_path, 1, EpisodeOutcome("complete", 1, 1, extra={"cause": "agent"}), True)
    _episode(tmp_path, 2, EpisodeOutcome("truncated", 0, 1, "the X display is gone (Xvfb exited)",
                                         extra={"cause": "infrastructure"}), False)    # recorded by an env alone
    _episode(tmp_path, 3, EpisodeOutcome("error", 0, 1, "infrastructure: orthanc exited with status -9",
                                         extra={"cause": "infrastructure"}), False)    # after a run's retries
    _episode(tmp_path, 4, EpisodeOutcome("truncated", 0, 1, "orthanc exited with status 1",
                                         extra={"cause": "agent"}), False)             # the agent crashed it
    summary, results = score_dirs([tmp_path])
    assert (summary["n_tasks"], summary["tca"], summary["infrastructure_errors"], len(results)) == (2, 0.5, 2, 2)
    assert summary["live_outcomes"] == {"app_crashed": 1}
    assert format_table(summary).splitlines()[-1] == \
        "infrastructure errors: 2 episodes, in no metric above"
