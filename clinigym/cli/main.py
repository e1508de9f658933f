"""The `clinigym` command line: every command is registered here, from the module of its
group (programs, tasks, runs, datasets, collect, references, soak)."""
from __future__ import annotations

import argparse
import sys

from clinigym.cli import collect, datasets, programs, references, runs, soak, tasks
from clinigym.core.errors import ClinigymError, SpecError

GROUPS = (programs, tasks, runs, datasets, collect, references, soak)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="clinigym", description="Real clinical imaging programs as Gymnasium environments.",
        epilog="Programs and scenarios are found on the search path: the folders of --path and of the "
               "CLINIGYM_PATH environment variable (':'-separated), then the built-in library. Each folder "
               "may hold containers/<app>/app.yaml and scenarios/<app>/<id>.yaml.")
    parser.add_argument("--path", action="append", default=[], metavar="DIR",
                        help="also a folder of programs and scenarios (repeatable)")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.path:
            from clinigym.spec.paths import add_folder
            for folder in args.path:
                add_folder(folder)
        return args.func(args)
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ClinigymError as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
