"""`clinigym soak`: a long pool run of the oracle with faults injected from outside, and what
it left (clinigym/bench/soak.py)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from clinigym.cli.conventions import examples


def format_soak(result) -> str:
    v = result.verdict
    lines = [f"soak: {v.planned} episodes planned in {result.seconds / 60:.1f} min (run exit status "
             f"{result.returncode})",
             f"episodes: {v.succeeded} succeeded, {len(v.failed)} ended early ("
             f"{', '.join(f'{n} {status}' for status, n in sorted(v.endings.items())) or 'none'}), "
             f"{len(v.missing)} without an outcome, {len(v.unexplained)} failed with no fault injected",
             v.counts, "", f"{'fault':<16}{'injected':>9}{'landed':>8}{'absorbed':>9}{'unattributed':>13}"]
    for kind, c in sorted(v.faults.items()):
        lines.append(f"{kind:<16}{c['injected']:>9}{c['landed']:>8}{c['absorbed']:>9}{c['unattributed']:>13}")
    total = sum(c["injected"] for c in v.faults.values())
    m = v.memory
    memory = ("too few samples" if m.get("flat") is None else
              f"{m['start_mb']:.0f} MB -> {m['end_mb']:.0f} MB ({m['growth_mb']:+.0f} MB, "
              f"{'flat' if m['flat'] else 'GROWING'})")
    lines += [f"{'all':<16}{total:>9}", "",
              f"runner crashes: {len(v.crashes)}", f"steps: {v.steps} finished, {len(v.lost_steps)} lost, "
              f"{v.unfinished_lines} cut off unfinished", f"leftovers: {len(v.leftovers)}",
              f"memory used (machine): {memory}", ""]
    problems = v.problems + [f"injector: {e}" for e in result.injector_errors]
    lines += [f"FAILED: {p}" for p in problems] or ["passed"]
    return "\n".join(lines)


def cmd_soak(args) -> int:
    from clinigym.bench.soak import soak
    from clinigym.runtime.slots import mark_owner
    mark_owner()   # its `clinigym run` is this process's: stopped (and swept) if the soak ends first
    out = Path(args.out)
    result = soak(out, args.episodes, args.faults, args.workers, args.seed, progress=not args.no_progress)
    data = result.to_json()
    (out / "soak.json").write_text(json.dumps(data, indent=2))
    print(json.dumps(data["verdict"], indent=2) if args.json else format_soak(result))
    if result.verdict.problems or result.injector_errors:
        print(f"the soak failed; its record: {out / 'soak.json'}", file=sys.stderr)
        return 1
    return 0


def register(sub) -> None:
    p = sub.add_parser("soak", help="a long pool run of the oracle with faults injected (programs, displays, "
                                    "containers, workers killed or stopped), then what it left",
                       epilog=examples("clinigym soak --out runs/soak",
                                       "clinigym soak --episodes 36 --faults 10 --seed 3 --out runs/soak-short"))
    p.add_argument("--episodes", type=int, default=1000, help="episodes in all, over the soak's scenario mix")
    p.add_argument("--faults", type=int, default=150, help="faults to inject, spread over the run")
    p.add_argument("--workers", type=int, default=4, help="pool workers (default 4)")
    p.add_argument("--seed", type=int, default=0, help="of the faults' moments, kinds and targets")
    p.add_argument("--out", default="runs/soak", metavar="DIR",
                   help="the run folder it writes (replaced; default runs/soak), with soak.json")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON instead of the table")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_soak)
