"""`clinigym bench`: latency, memory and settling of every program, the accessibility tree's
read alone, or the throughput of pools and Ray (clinigym/bench/)."""
from __future__ import annotations

from pathlib import Path

from clinigym.cli.conventions import Ignored, add_deprecated, at_least_one, examples, filled, program, warn_ignored
from clinigym.runtime.backends import KINDS

BENCH_DEFAULTS = {"repeats": 10, "side_by_side": "dicomscope", "backends": ["local"], "rounds": 3,
                  "watch_all": False}
BENCH_IGNORED = (Ignored(("--program", "--repeats", "--side-by-side", "--watch-all", "--backends"),
                         lambda a: "with --throughput" if a.throughput else None),
                 Ignored(("--side-by-side", "--watch-all"), lambda a: "with --tree" if a.tree else None),
                 Ignored(("--side-by-side", "--watch-all"), lambda a: "with --families" if a.families else None),
                 Ignored(("--rounds",), lambda a: None if a.throughput else "without --throughput"))


def _program_or_none(text: str) -> str:
    return text if text == "none" else program(text)


def cmd_bench(args) -> int:
    warn_ignored(args, BENCH_IGNORED)
    args = filled(args, BENCH_DEFAULTS)
    out = Path(args.json_out) if args.json_out else None
    if args.throughput:
        from clinigym.bench.throughput import run_throughput
        return run_throughput(out, args.rounds)
    from clinigym.spec.apps import app_names
    if args.tree:
        from clinigym.bench.tree import run_tree_bench
        return run_tree_bench(args.program or app_names(), args.repeats, out, args.backends)
    if args.families:
        from clinigym.bench.families import run_families_bench
        return run_families_bench(args.program or app_names(), args.repeats, out, args.backends)
    from clinigym.bench.latency import run_bench
    return run_bench(args.program or app_names(), args.repeats, out, args.backends,
                     side_by_side=None if args.side_by_side == "none" else args.side_by_side,
                     watch_all=args.watch_all)


def register(sub) -> None:
    p = sub.add_parser("bench", help="measure screenshot, step and reset latency, memory, and settling "
                                     "under each settle rule", epilog=examples(
        "clinigym bench --program orthanc dicomscope --repeats 3 --side-by-side none",
        "clinigym bench --tree --backends local docker --repeats 3 --json-out runs/bench-tree.json",
        "clinigym bench --throughput --rounds 3 --json-out runs/bench-throughput.json"))
    p.add_argument("--program", nargs="+", type=program, metavar="PROGRAM", help="programs (default: all)")
    add_deprecated(p, "--apps", "--program", "program", nargs="*", type=program)
    p.add_argument("--repeats", type=at_least_one, help="resets and oracle episodes per program (default 10)")
    p.add_argument("--side-by-side", type=_program_or_none, metavar="PROGRAM",
                   help="the program run in more and more environments at once ('none': skip; default "
                        "dicomscope)")
    p.add_argument("--json-out", metavar="FILE", help="also write the numbers as JSON to this file")
    add_deprecated(p, "--out", "--json-out", "json_out")
    p.add_argument("--watch-all", action="store_true", default=None,
                   help="watch what is drawn after every oracle step of every scenario (default: the "
                        "first scenario of each program): the evidence for each program's settle windows")
    p.add_argument("--backends", nargs="+", choices=KINDS,
                   help="backends to measure (default local; docker adds restart vs recreate and side-by-side "
                        "scaling)")
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--tree", action="store_true",
                       help="instead: only the accessibility tree's read per observation beside the step, "
                            "on every program with a tree (also part of the whole bench)")
    modes.add_argument("--families", action="store_true",
                       help="instead: only the reset of task families' instances (generated studies loaded) "
                            "beside a fixed scenario's, on every program with families (also part of the "
                            "whole bench)")
    modes.add_argument("--throughput", action="store_true",
                       help="instead: episodes and steps per minute of the oracle with 1, 2, 4 and 8 workers "
                            "and on a two-node loopback Ray cluster (needs root and clinigym[ray])")
    p.add_argument("--rounds", type=at_least_one,
                   help="with --throughput: rounds of every run (medians; ratios within a round; default 3)")
    p.set_defaults(func=cmd_bench)
