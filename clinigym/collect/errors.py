"""The errors the collection page answers with."""
from __future__ import annotations

from clinigym.core.errors import ClinigymError


class ActionError(ClinigymError, ValueError):
    """A malformed action or request: HTTP 400 with the reason."""


class Conflict(ClinigymError, RuntimeError):
    """A request that the session's state does not allow now: HTTP 409 with the reason."""
