"""Running agents: `run`, `score`, `agents`, `bench`."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
from pathlib import Path

from clinigym.agents import AGENTS
from clinigym.core.audit import DEFAULT_PENALTIES, PENALTIES
from clinigym.core.context import MODES
from clinigym.envs.goal import BUDGET_FACTOR
from clinigym.runtime.backends import KINDS


def _at_least_one(text: str) -> int:
    """argparse type of a count: argparse then exits with status 2 and `argument --FLAG: at least 1`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("at least 1")
    return value


def _flag_dest(flag: str) -> str:
    return "option_" + flag.lstrip("-").replace("-", "_")


def _agent_options(args) -> dict:
    """The chosen agent's own options, from the flags its registry entry declares (its own
    default where the flag is not given: agents that share a flag keep their defaults)."""
    return {o.dest: o.default if (v := getattr(args, _flag_dest(o.flag))) is None else v
            for o in AGENTS[args.agent].options}


def _add_agent_options(p) -> None:
    """One argument per flag, shared by the agents that declare it (e.g. --base-url)."""
    by_flag: dict[str, list] = {}
    for entry in AGENTS.values():
        for o in entry.options:
            by_flag.setdefault(o.flag, []).append(o)
    for flag, options in by_flag.items():
        if len({o.type for o in options}) > 1:
            raise ValueError(f"agents declare {flag} with different types")
        p.add_argument(flag, dest=_flag_dest(flag), type=options[0].type, default=None,
                       metavar=flag.lstrip("-").replace("-", "_").upper(),
                       help="; ".join(dict.fromkeys(o.help for o in options)))


def cmd_run(args) -> int:
    from clinigym.eval.scoring import format_table
    from clinigym.run.runner import RunStopped, resume, run, run_static
    from clinigym.spec.scenarios import first_per_program, select
    if bool(args.out) == bool(args.resume):
        print("error: give --out (a new run) or --resume DIR (a run to continue)", file=sys.stderr)
        return 2
    if args.workers < 1 or ((args.workers > 1 or args.ray) and args.dataset):
        print("error: --workers: at least 1; more, and --ray, only for live scenarios", file=sys.stderr)
        return 2
    out = Path(args.resume or args.out)
    if args.out and ((out / "episodes").exists() and any((out / "episodes").iterdir())
                     or (out / "run.json").exists()):
        if not args.overwrite:
            print(f"error: {out} holds a run already; use --overwrite, another --out, or --resume {out}",
                  file=sys.stderr)
            return 2
        shutil.rmtree(out)
    options = _agent_options(args)
    try:
        if args.resume:
            result = resume(out, workers=args.workers, progress=not args.no_progress, ray=args.ray)
        elif args.dataset:
            result = run_static(Path(args.dataset), args.agent, out, args.software, args.seed, args.single_step,
                                args.delta, progress=not args.no_progress, agent_options=options)
        else:
            scenarios = list({s.key: s for pattern in args.scenario for s in select(pattern)}.values())
            if args.per_program:
                scenarios = first_per_program(scenarios, args.per_program)
            result = run(scenarios, args.agent, out, args.episodes, args.seed, args.recovery,
                         progress=not args.no_progress, agent_options=options, backend=args.backend,
                         mode=args.mode, budget=args.budget, workers=args.workers, ray=args.ray)
    except RunStopped as stop:
        return _stopped(stop, out, in_process=args.workers == 1 and not args.ray)
    if args.json:
        print(json.dumps(result.summary, indent=2))
    else:
        print(format_table(result.summary, f"agent: {result.summary.get('agent', args.agent)}   run: {out}"))
        for err in result.errors:
            print(f"error in {err['scenario']} episode {err['episode']}: {err['error']}", file=sys.stderr)
    return 1 if result.errors else 0


def _stopped(stop, out: Path, in_process: bool) -> int:
    """A run stopped by a signal: its programs are closed. Run in this process, whatever a
    start that the signal cut short left running is this process's own (it runs nothing
    else) and is removed; a pool has removed what its workers left."""
    from clinigym.run.cleanup import sweep
    if in_process:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)   # closing is bounded: a second signal does not cut it short
        sweep({os.getpid()})
    print(f"stopped ({stop}); continue with: clinigym run --resume {out}", file=sys.stderr)
    return 128 + stop.signum


def cmd_score(args) -> int:
    from clinigym.eval.scoring import format_table, score_dirs, summarize
    if args.predictions:
        from clinigym.eval.predictions import read_predictions, score_predictions
        from clinigym.spec.medspot import read_dataset
        if not args.dataset:
            print("error: --predictions needs --dataset", file=sys.stderr)
            return 2
        results = score_predictions(read_dataset(Path(args.dataset)), read_predictions(Path(args.predictions)),
                                    args.delta, args.top_k)
        summary = summarize(results) | {"delta": args.delta, "top_k": args.top_k}
    else:
        summary, results = score_dirs([Path(d) for d in args.dirs], args.penalties)
    if not results:
        print(f"no recorded episodes under {' '.join(args.dirs)}", file=sys.stderr)
        return 1
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2) if args.json else format_table(summary))
    return 0


def cmd_compare(args) -> int:
    from clinigym.eval.compare import compare_rows, format_compare
    missing = [d for d in args.dirs if not Path(d).is_dir()]
    if missing:
        print(f"error: no such run folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    rows = compare_rows([Path(d) for d in args.dirs], args.penalties)
    if not rows:
        print(f"no recorded episodes under {' '.join(args.dirs)}", file=sys.stderr)
        return 1
    print(json.dumps(rows, indent=2) if args.json else format_compare(rows))
    return 0


def cmd_agents(args) -> int:
    from clinigym.agents.cua.formats import FORMATS
    from clinigym.agents.families import FAMILIES
    rows = {"agents": {k: {"description": e.description, "privileged": e.privileged,
                           "options": [o.flag for o in e.options]} for k, e in AGENTS.items()},
            "families": {k: {"coords": f.coords, "description": f.description} for k, f in FAMILIES.items()},
            "cua_formats": {k: {"description": f.description} for k, f in FORMATS.items()}}
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("agents:")
    for name, entry in rows["agents"].items():
        print(f"  {name:<8} {entry['description']}")
    print("model families (--agent http --model-family NAME):")
    for name, fam in rows["families"].items():
        print(f"  {name:<20} {fam['coords']}")
    print("computer-use formats (--agent cua --cua-format NAME; plan and goal modes):")
    for name, fmt in rows["cua_formats"].items():
        print(f"  {name:<20} {fmt['description']}")
    return 0


def cmd_bench(args) -> int:
    if args.throughput:
        from clinigym.bench.throughput import run_throughput
        return run_throughput(Path(args.out) if args.out else None, args.rounds)
    from clinigym.bench.latency import run_bench
    from clinigym.spec.apps import app_names
    return run_bench(args.apps or app_names(), args.repeats, Path(args.out) if args.out else None, args.backends,
                     side_by_side=None if args.side_by_side == "none" else args.side_by_side,
                     watch_all=args.watch_all)


def register(sub) -> None:
    p = sub.add_parser("run", help="run an agent on live scenarios, record and score")
    p.add_argument("--scenario", nargs="+", default=["*"],
                   help="globs on app/id, app names or scenario files (each scenario once, in this order)")
    p.add_argument("--per-program", type=_at_least_one, metavar="N",
                   help="only the first N matching scenarios of every program (by id)")
    p.add_argument("--dataset", help="static mode: a MedSPOT-format dataset instead of live scenarios")
    p.add_argument("--software", help="static mode: only this software's tasks")
    p.add_argument("--single-step", action="store_true",
                   help="static mode: judge every step alone too (MedSPOT's ablation)")
    p.add_argument("--delta", type=float, default=0.0, help="static mode: hit tolerance in pixels")
    p.add_argument("--agent", default="oracle", choices=sorted(AGENTS), help="see `clinigym agents`")
    _add_agent_options(p)   # each agent's own options, as its registry entry declares them
    p.add_argument("--out", help="run folder (run.json, episodes/, summary.json)")
    p.add_argument("--resume", metavar="DIR",
                   help="continue the run in DIR (stopped or killed) with the parameters it was started "
                        "with: finished episodes are kept, one that was cut off runs again")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="run episodes at once in N processes, each with its own program instances "
                        "(with --ray: N actors on the cluster)")
    p.add_argument("--ray", nargs="?", const="auto", metavar="ADDRESS",
                   help="run the episodes on a running Ray cluster (default address: auto, the one on "
                        "this machine); needs clinigym[ray]; on one machine start it with loopback only "
                        "(README)")
    p.add_argument("--episodes", type=_at_least_one, default=1, help="episodes per scenario")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mode", choices=MODES, default="steps",
                   help="steps: one instruction per step, each action judged (MedSPOT); plan: every step "
                        "instruction at once; goal: one sentence (MedCUA); plan and goal are judged on the "
                        "program's final state and by a safety audit")
    p.add_argument("--budget", type=int, metavar="N",
                   help=f"plan/goal: actions per episode (default {BUDGET_FACTOR} x (reference steps + 1))")
    p.add_argument("--recovery", action="store_true", help="steps: continue after errors (PROTOCOL.md)")
    p.add_argument("--backend", choices=KINDS,
                   help="where programs run (default: $CLINIGYM_BACKEND, else local for programs "
                        "of this machine's Debian release, docker for the others)")
    p.add_argument("--json", action="store_true", help="print summary.json instead of the table")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--overwrite", action="store_true", help="replace a run already in --out")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("score", help="score recorded episodes, or a predictions file against a dataset")
    p.add_argument("dirs", nargs="*", help="run folders or episode folders")
    p.add_argument("--predictions", help="JSONL predictions file (see clinigym/eval/predictions.py)")
    p.add_argument("--dataset", help="with --predictions: the MedSPOT-format dataset")
    p.add_argument("--delta", type=float, default=0.0, help="with --predictions: tolerance in pixels")
    p.add_argument("--top-k", type=int, default=1, help="with --predictions: a hit among the first K points")
    p.add_argument("--penalties", choices=sorted(PENALTIES), default=DEFAULT_PENALTIES,
                   help="plan/goal: severity weights of the safety score (MedCUA's code, or its README)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", help="also write the summary JSON here")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("compare", help="runs side by side: steps-mode TCA beside plan/goal success and safety")
    p.add_argument("dirs", nargs="+", help="run folders")
    p.add_argument("--penalties", choices=sorted(PENALTIES), default=DEFAULT_PENALTIES,
                   help="plan/goal: severity weights of the safety score")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("agents", help="list agents (and their options) and model families")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_agents)

    p = sub.add_parser("bench", help="measure screenshot, step and reset latency, memory, and settling "
                                     "under each settle rule")
    p.add_argument("--apps", nargs="*", help="programs (default: all)")
    p.add_argument("--repeats", type=_at_least_one, default=10, help="resets and oracle episodes per program")
    p.add_argument("--side-by-side", default="dicomscope", metavar="APP",
                   help="the program run in more and more environments at once ('none': skip)")
    p.add_argument("--out", help="also write the numbers as JSON here")
    p.add_argument("--watch-all", action="store_true",
                   help="watch what is drawn after every oracle step of every scenario (default: the "
                        "first scenario of each program): the evidence for each program's settle windows")
    p.add_argument("--backends", nargs="*", choices=KINDS, default=["local"],
                   help="backends to measure (docker adds restart vs recreate and side-by-side scaling)")
    p.add_argument("--throughput", action="store_true",
                   help="instead: episodes and steps per minute of the oracle with 1, 2, 4 and 8 workers "
                        "and on a two-node loopback Ray cluster (needs root and clinigym[ray])")
    p.add_argument("--rounds", type=_at_least_one, default=3,
                   help="with --throughput: rounds of every run (medians; ratios within a round)")
    p.set_defaults(func=cmd_bench)
