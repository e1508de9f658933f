"""One error hierarchy for the whole package.

- `ClinigymError`: the base; catch it to handle every error clinigym raises on purpose.
- `SpecError`: a program, scenario or dataset file that cannot be used (file, field, problem).
- `ProgramError`: the live program, its display or its container failed. A reset may
  retry it (the environment does, once, and records the first cause).
- `AgentError`: an agent cannot act (a model server that keeps failing, a missing checkpoint).
- `InvalidAction`: an action that cannot be executed; reported in `info`, never raised
  out of `step()`.
- `DataError`: a recording, a predictions file or a report input that cannot be read.

A bug (a TypeError, a KeyError) is none of these and is never taken for one.
"""
from __future__ import annotations

from pathlib import Path


class ClinigymError(Exception):
    """Base of every error clinigym raises on purpose."""


class SpecError(ClinigymError, ValueError):
    """A spec file that cannot be used: `file: field: problem`."""

    def __init__(self, path: Path | str, field: str, problem: str):
        self.path, self.field, self.problem = str(path), field, problem
        super().__init__(f"{path}: {field or '(top level)'}: {problem}")


class ProgramError(ClinigymError, RuntimeError):
    """The live program (or its display, browser or container) failed; a reset may retry."""


class Abort(ClinigymError):
    """Raised inside a wait to stop waiting at once: what is awaited cannot happen."""


class ProgramDied(ProgramError, Abort):
    """A process of the program exited while it was expected to run."""


class WaitTimeout(ProgramError, TimeoutError):
    """A bounded wait for a condition ran out."""


class TargetNotFound(ProgramError):
    """A step's target could not be resolved on the live screen."""


class AgentError(ClinigymError, RuntimeError):
    """An agent cannot act: its model server keeps failing, its checkpoint is missing."""


class InvalidAction(ClinigymError, ValueError):
    """An action that cannot be executed; reported in `info`, never raised out of step()."""


class DataError(ClinigymError, ValueError):
    """A recording, dataset, predictions file or report input that cannot be read."""
