"""What every bench over programs shares: each program measured on every backend it runs on
(one broken program must not lose the others' numbers), its errors printed, the numbers
kept as JSON."""
from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from clinigym.runtime.backends.local import host_release
from clinigym.spec.apps import load_app

__all__ = ["finish", "measure_each", "save_json"]


def measure_each(apps: list[str], backends: list[str], measure: Callable[[str, str], dict | None],
                 into: list[dict], errors: list[dict]) -> None:
    """`measure(program, backend)` where the program runs (a program of another Debian release
    only in its container); its results (None: nothing to measure) into `into`, its failures
    into `errors`."""
    for kind in backends:
        for name in apps:
            app = load_app(name)
            if kind not in app.backends or (kind == "local" and app.release != host_release()):
                continue
            try:
                found = measure(name, kind)
            except Exception as exc:  # noqa: BLE001 - one broken program must not lose the others' numbers
                errors.append({"app": name, "backend": kind, "error": f"{type(exc).__name__}: {exc}"})
                continue
            if found is not None:
                into.append(found)


def save_json(result: dict, out: Path | None) -> None:
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2))


def finish(result: dict, out: Path | None) -> int:
    """Print the errors, save the numbers; the exit status (1 when a program failed)."""
    for err in result["errors"]:
        print(f"error: {err['app']} on {err['backend']}: {err['error'][:500]}", file=sys.stderr)
    save_json(result, out)
    return 1 if result["errors"] else 0
