"""Tasks: `scenarios`, `tasks` (the task families), `coverage`, `shape`, `targets`."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from clinigym.cli.conventions import examples
from clinigym.spec.cohort import SPLITS


def cmd_scenarios(args) -> int:
    from clinigym.spec.scenarios import select
    scenarios = select(args.pattern)
    if args.targets:
        return _target_kinds(scenarios, args.json)
    if args.json:
        print(json.dumps([{"key": s.key, "gym_id": s.gym_id, "app": s.app, "steps": len(s.steps),
                           "overview": s.overview, "path": str(s.path)} for s in scenarios], indent=2))
        return 0
    for s in scenarios:
        print(f"{s.gym_id:<48} {len(s.steps)} steps  {s.overview}")
    print(f"{len(scenarios)} scenarios")
    return 0


def cmd_tasks(args) -> int:
    """The task families, their parameters and how many distinct instances each has at least;
    with --seed, that instance of each."""
    from clinigym.spec.task_families import select_families
    families = select_families(args.pattern)
    rows = []
    for f in families:
        row = {"key": f.key, "gym_id": f.mode_gym_id("steps"), "instances": f.count(args.split),
               "split": args.split,
               "params": {n: p.model_dump(exclude_none=True, exclude_defaults=True) for n, p in f.spec.params.items()},
               "cohort": f.spec.cohort.model_dump() if f.spec.cohort else None, "path": str(f.path)}
        if args.seed is not None:
            one = f.instance(args.seed, args.split).scenario
            row["instance"] = {"seed": args.seed, "goal": one.goal, "steps": [st.instruction for st in one.steps]}
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        drawn = (["generated cohort"] if row["cohort"] else []) + list(row["params"])
        print(f"{row['gym_id']:<52} {row['instances']:>14,} instances  draws: {', '.join(drawn)}")
        if "instance" in row:
            print(f"  seed {args.seed}: {row['instance']['goal']}")
            for i, text in enumerate(row["instance"]["steps"], 1):
                print(f"    {i}. {text}")
    print(f"{len(rows)} {'family' if len(rows) == 1 else 'families'}")
    return 0


def _target_kinds(scenarios, as_json: bool) -> int:
    """How the steps' targets (drag ends included) are found, per program."""
    from collections import Counter
    kinds: dict[str, Counter] = {}
    for s in scenarios:
        for step in s.steps:
            for target in (step.target, step.end_target):
                if target is not None:
                    kinds.setdefault(s.app, Counter())[target.kind] += 1
    rows = {app: {k: c[k] for k in ("element", "selector", "box")} for app, c in sorted(kinds.items())}
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'program':<12} {'element':>8} {'selector':>9} {'box':>5} {'by meaning':>11}")
    for app, c in rows.items():
        print(f"{app:<12} {c['element']:>8} {c['selector']:>9} {c['box']:>5} "
              f"{(c['element'] + c['selector']) / sum(c.values()):>10.1%}")
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


def cmd_targets(args) -> int:
    from tqdm import tqdm

    from clinigym.collect.semantic import propose_targets, rewrite
    from clinigym.spec.scenarios import select
    scenarios = [s for s in select(args.pattern) if any(t is not None and t.box is not None
                                                        for st in s.steps for t in (st.target, st.end_target))]
    proposed, failed, rewritten = [], [], 0
    for scenario in tqdm(scenarios, desc="targets", unit="scenario", disable=args.no_progress):
        try:
            found = propose_targets(scenario, args.backend)
        except Exception as exc:  # noqa: BLE001 - one scenario that cannot run must not lose the others
            failed.append({"scenario": scenario.key, "error": f"{type(exc).__name__}: {exc}"[:500]})
            continue
        proposed += found
        if args.write:
            rewritten += rewrite(scenario.path, found)
    rows = [p.to_json() for p in proposed]
    named = sum(p.checked for p in proposed)
    anchored = sum(p.checked and p.naming.part is not None for p in proposed)
    summary = {"box_targets": len(proposed), "named": named, "anchored": anchored, "rewritten": rewritten,
               "failed": failed, "targets": rows}
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        for r in rows:
            what = json.dumps(r["target"], ensure_ascii=False) if r["checked"] else f"not named: {r['reason']}"
            print(f"{r['scenario']:<44} step {r['step']:>2} {r['field']:<10} {what}")
        print(f"{named} of {len(proposed)} box targets named ({anchored} anchored to a named element with a "
              f"part); {rewritten} rewritten")
    for f in failed:
        print(f"error: {f['scenario']}: {f['error']}", file=sys.stderr)
    return 1 if failed else 0


def register(sub) -> None:
    from clinigym.eval.coverage import PROGRAMS
    from clinigym.runtime.backends import KINDS
    p = sub.add_parser("scenarios", help="list (and validate) scenario files",
                       epilog=examples("clinigym scenarios", "clinigym scenarios 'orthanc/*' --json",
                                       "clinigym scenarios scenarios/orthanc/delete-study.yaml"))
    p.add_argument("pattern", nargs="?", default="*",
                   help="glob on program/id, a program name or a scenario file (default: all)")
    p.add_argument("--targets", action="store_true",
                   help="instead: how the steps' targets are found, per program (element, selector, box)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_scenarios)

    p = sub.add_parser(
        "tasks", help="list the task families, their parameters and their counts of distinct instances",
        description="A family is a scenario drawn anew from each seed: generated patients and studies, "
                    "values from its parameters (scenarios/<program>/families/<name>.yaml). The count is "
                    "computed from the parameters' domains: the distinct patients the task can name times "
                    "every parameter's values.",
        epilog=examples("clinigym tasks", "clinigym tasks orthanc --json",
                        "clinigym tasks 'orthanc/delete-*' --seed 7"))
    p.add_argument("pattern", nargs="?", default="*", help="glob on program/name, or a program name (default: all)")
    p.add_argument("--seed", type=int, help="also print this instance of each: its goal and its steps")
    p.add_argument("--split", choices=SPLITS, help="count (and draw) in this split only (default: all)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_tasks)

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

    p = sub.add_parser(
        "targets", help="name the pixel-box targets of scenarios by the programs' own elements",
        description="Runs each scenario's reference path with the oracle, its program's accessibility on, "
                    "and proposes for every box target of its steps an element target (role, name, "
                    "ancestor; a part of a named element's box inside an opaque widget), checked live. "
                    "--write puts the checked proposals into the scenario files. Exit 1 when a scenario "
                    "could not run.",
        epilog=examples("clinigym targets 'aeskulap/*'", "clinigym targets dicomscope/medspot-01-flip --write",
                        "clinigym targets gnuhealth --json"))
    p.add_argument("pattern", help="glob on program/id, a program name or a scenario file")
    p.add_argument("--write", action="store_true", help="rewrite the scenario files with the checked proposals")
    p.add_argument("--backend", choices=KINDS, help="where the programs run (default: as `run`)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_targets)
