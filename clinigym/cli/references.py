"""Reference images of `screen` checks: `reference`."""
from __future__ import annotations

import json
from pathlib import Path

from clinigym.cli.conventions import examples


def _line(m) -> str:
    final = f"{min(m.finals):.6f}" if m.finals else "-"
    start = f"{max(m.starts):.6f}" if m.starts else "-"
    return (f"{m.scenario} check[{m.index}] {m.ref.box} {'recorded' if m.recorded else 'kept':<8} "
            f"final min {final} ({len(m.finals)} runs)  start max {start}  "
            f"threshold {m.ref.min_identical}  {'ok' if m.ok else 'FAILS'}")


def cmd_reference(args) -> int:
    from clinigym.run.references import measure, screen_scenarios
    measures = measure(screen_scenarios(args.pattern), args.runs, args.overwrite, args.backend,
                       Path(args.frames) if args.frames else None,
                       report=(lambda m: None) if args.json else (lambda m: print(_line(m), flush=True)))
    if args.json:
        print(json.dumps([m.to_json() for m in measures], indent=2))
    return 0 if all(m.ok for m in measures) else 1


def register(sub) -> None:
    from clinigym.runtime.backends import KINDS
    p = sub.add_parser(
        "reference", help="record and measure the reference images of `screen` checks",
        description="For every matching scenario with a `screen` check: run the oracle (steps mode) to the end "
                    "and write each missing reference (the check's box of the final screen, a PNG at the "
                    "path its `reference` names, relative to the scenario file); then run --runs more "
                    "episodes from fresh resets and report, per check, the lowest identity of the final "
                    "region with its reference and the highest identity of the untouched start region. "
                    "Exit 1 when a final region falls below the check's min_identical or a start region "
                    "reaches it.",
        epilog=examples("clinigym reference dicomscope",
                        "clinigym reference 'dicomscope/medspot-0*' --runs 3 --backend docker",
                        "clinigym reference dicomscope --overwrite --frames runs/frames --json"))
    p.add_argument("pattern", help="glob on program/id, or a program name")
    p.add_argument("--runs", type=int, default=0, metavar="N", help="episodes that measure (default 0: record only)")
    p.add_argument("--overwrite", action="store_true", help="record every reference again")
    p.add_argument("--backend", choices=KINDS, help="where programs run (default as for `clinigym run`)")
    p.add_argument("--frames", metavar="DIR", help="also save each episode's whole start and final screens here")
    p.add_argument("--json", action="store_true", help="print the measures as JSON")
    p.set_defaults(func=cmd_reference)
