"""The spec files' JSON Schemas: `schema`."""
from __future__ import annotations

import sys
from pathlib import Path

from clinigym.cli.conventions import examples


def cmd_schema(args) -> int:
    from clinigym.spec.schema import schema_text
    text = schema_text(args.kind)
    if args.json_out:
        Path(args.json_out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def register(sub) -> None:
    from clinigym.spec.schema import KINDS
    p = sub.add_parser(
        "schema", help="the JSON Schema of the program file or the scenario file",
        description="Print the JSON Schema (draft 2020-12) of a program file (containers/<program>/app.yaml) or a "
                    "scenario file (scenarios/<program>/<id>.yaml), generated from clinigym's own models: for an "
                    "editor's completion and checks. clinigym's loader checks more than the schema can "
                    "(variables, port blocks, known programs).",
        epilog=examples("clinigym schema program",
                        "# the copy the documentation links (a unit test keeps it equal to the models)",
                        "clinigym schema scenario --json-out docs/reference/schemas/scenario.schema.json"))
    p.add_argument("kind", choices=list(KINDS), help="which file")
    p.add_argument("--json-out", metavar="FILE", help="write the schema to this file (default: standard output)")
    p.set_defaults(func=cmd_schema)
