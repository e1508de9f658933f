"""How the plain-text tables write numbers: one rule for every table the CLI prints."""
from __future__ import annotations


def pct(v) -> str:
    """A rate as the tables print it ('-' when there is none)."""
    return "-" if v is None else f"{100 * v:5.1f}%"
