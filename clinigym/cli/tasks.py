"""Tasks: `scenarios`, `coverage`, `shape`."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from clinigym.cli.conventions import examples


def cmd_scenarios(args) -> int:
    from clinigym.spec.scenarios import select
    scenarios = select(args.pattern)
    if args.json:
        print(json.dumps([{"key": s.key, "gym_id": s.gym_id, "app": s.app, "steps": len(s.steps),
                           "overview": s.overview, "path": str(s.path)} for s in scenarios], indent=2))
        return 0
    for s in scenarios:
        print(f"{s.gym_id:<48} {len(s.steps)} steps  {s.overview}")
    print(f"{len(scenarios)} scenarios")
    return 0


def cmd_coverage(args) -> int:
    from clinigym.eval.coverage import coverage, load_not_reproduced, markdown, to_json
    from clinigym.spec.medspot import read_dataset
    from clinigym.spec.scenarios import all_scenarios
    rows = coverage(read_dataset(Path(args.annotations)), all_scenarios(), load_not_reproduced())
    print(json.dumps(to_json(rows), indent=2) if args.json else markdown(rows))
    missing = [f"{r.software} {r.task}" for r in rows if r.status == "missing"]
    if missing:
        print(f"missing: {', '.join(missing)}", file=sys.stderr)
    return 1 if missing else 0


def cmd_shape(args) -> int:
    from clinigym.eval.coverage import shape, shape_table
    from clinigym.spec.medspot import read_dataset
    named = {}
    for folder in args.datasets:
        tasks = read_dataset(Path(folder))
        named[folder] = shape(tasks)
        if args.per_program:
            for software in sorted({t.software for t in tasks}):
                named[f"{folder} {software}"] = shape([t for t in tasks if t.software == software])
    print(json.dumps(named, indent=2) if args.json else shape_table(named))
    return 0


def register(sub) -> None:
    from clinigym.eval.coverage import PROGRAMS
    p = sub.add_parser("scenarios", help="list (and validate) scenario files",
                       epilog=examples("clinigym scenarios", "clinigym scenarios 'orthanc/*' --json",
                                       "clinigym scenarios scenarios/orthanc/delete-study.yaml"))
    p.add_argument("pattern", nargs="?", default="*",
                   help="glob on program/id, a program name or a scenario file (default: all)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_scenarios)

    p = sub.add_parser(
        "coverage", help="which MedSPOT tasks the scenario library reproduces live",
        description="One row per MedSPOT task of " + ", ".join(PROGRAMS) + ": its live scenario, its status "
                    "(reproduced, adapted, impossible, blocked, missing) and the adaptation or reason. "
                    "Exit 1 when a task is missing.",
        epilog=examples("clinigym coverage medspot/annotations", "clinigym coverage medspot/annotations --json"))
    p.add_argument("annotations", help="folder with MedSPOT's <Software>_Annotation.json files")
    p.add_argument("--json", action="store_true", help="machine-readable output (default: Markdown tables)")
    p.set_defaults(func=cmd_coverage)

    p = sub.add_parser(
        "shape", help="tasks, steps, action types and target sizes of MedSPOT-format datasets, side by side",
        epilog=examples("clinigym shape medspot/annotations datasets/medspot-live --per-program"))
    p.add_argument("datasets", nargs="+", help="dataset folders (annotation JSON files)")
    p.add_argument("--per-program", action="store_true", help="also one row per annotation file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_shape)
