"""The `clinigym` command line: every command is registered here, from the module of its
group (programs, tasks, runs, bench, datasets, collect, references, soak, schema).

The conventions every command follows (`clinigym --help` says them too):

- "program" is the word for a clinical program: `clinigym programs`, `--program NAME`.
- `--out DIR` is always the folder a command writes into (run, report, soak, collect); a
  command that writes one file names it with a flag of its own (`score --json-out FILE`,
  `bench --json-out FILE`, `export --parquet FILE`). `--json` prints JSON on stdout.
- A value from a fixed set (mode, backend, penalties, program...) is checked when parsing.
- A flag that the chosen mode or agent ignores is run anyway, with a warning on stderr
  (`warning: --budget is ignored in the steps mode`).
- An old spelling still works for one release, with a deprecation warning on stderr:
  `clinigym apps` (programs), `collect --app` (--program), `collect --out-dir` (--out),
  `bench --apps` (--program), `score --out FILE` and `bench --out FILE` (--json-out FILE).
- Every command's help ends with examples, which the unit tests parse.
"""
from __future__ import annotations

import argparse
import sys

from clinigym._version import __version__
from clinigym.cli import bench, collect, datasets, programs, references, runs, schema, soak, tasks
from clinigym.cli.conventions import Parser, examples
from clinigym.core.errors import ClinigymError, SpecError

GROUPS = (programs, tasks, runs, bench, datasets, collect, references, soak, schema)

CONVENTIONS = """\
conventions:
  "program" is a clinical program (clinigym programs, --program NAME).
  --out DIR is always the folder a command writes into; a command that writes one
  file names it with its own flag (--json-out FILE, --parquet FILE); --json prints JSON.
  A flag the chosen mode or agent ignores gives a warning on stderr.
  Programs and scenarios are found on the search path: the folders of --path and of the
  CLINIGYM_PATH environment variable (':'-separated), then the built-in library. Each
  folder may hold containers/<program>/app.yaml and scenarios/<program>/<id>.yaml.

"""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="clinigym", description="Real clinical imaging programs as Gymnasium environments.",
        epilog=CONVENTIONS + examples(
            "clinigym programs",
            "clinigym scenarios 'orthanc/*'",
            "clinigym run --scenario orthanc/open-patient-study --agent oracle --out runs/oracle"))
    parser.add_argument("--version", action="version", version=f"clinigym {__version__}",
                        help="print the version of clinigym and exit")
    parser.add_argument("--path", action="append", default=[], metavar="DIR",
                        help="also a folder of programs and scenarios (repeatable)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND")
    for group in GROUPS:
        group.register(sub)
    return parser


def _add_path(argv: list[str] | None) -> None:
    """The --path folders, on the search path before the command's arguments are parsed
    (a program name given to --program is checked against them)."""
    pre = argparse.ArgumentParser(prog="clinigym", add_help=False, allow_abbrev=False)
    pre.add_argument("--path", action="append", default=[])
    from clinigym.spec.paths import add_folder
    for folder in pre.parse_known_args(argv)[0].path:
        add_folder(folder)


def main(argv: list[str] | None = None) -> int:
    try:
        _add_path(argv)
        args = build_parser().parse_args(argv)
        return args.func(args)
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ClinigymError as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
