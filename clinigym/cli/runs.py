"""Running agents: `run`, `score`, `compare`, `agents`."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
from pathlib import Path

from clinigym.agents import AGENTS, all_agents, resolve
from clinigym.agents.plugins import parse_option
from clinigym.agents.request import OptionError
from clinigym.cli.conventions import (
    Ignored,
    add_deprecated,
    at_least_one,
    at_least_zero,
    examples,
    filled,
    warn_ignored,
)
from clinigym.core.audit import DEFAULT_PENALTIES, PENALTIES
from clinigym.core.context import MODES
from clinigym.core.errors import AgentError
from clinigym.envs.goal import AUDITS, BUDGET_FACTOR
from clinigym.envs.observations import OBS_MODES
from clinigym.run.episodes import RETRIES
from clinigym.runtime.backends import KINDS
from clinigym.runtime.display import MAX_SCREEN, MIN_SCREEN, Geometry
from clinigym.spec.cohort import SPLITS


def _flag_dest(flag: str) -> str:
    return "option_" + flag.lstrip("-").replace("-", "_")


def _agent(text: str) -> str:
    """argparse type of --agent: a built-in agent, an installed entry point's, or
    `package.module:factory`, resolved now, so that a bad one is refused before anything runs."""
    try:
        resolve(text)
    except AgentError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _screen(text: str) -> Geometry:
    """argparse type of --screen: WIDTHxHEIGHT, refused at parse time when malformed or out of range."""
    try:
        return Geometry.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _agent_option(text: str) -> tuple:
    try:
        return parse_option(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _checked(parse):
    """An option's parser for argparse: its OptionError becomes argparse's message."""
    def check(text: str):
        try:
            return parse(text)
        except OptionError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    check.__name__ = getattr(parse, "__name__", "value")   # argparse names a plain ValueError's type by it
    return check


def _agent_options(args) -> dict:
    """The chosen agent's own options, from the flags its registry entry declares (its own
    default where the flag is not given: agents that share a flag keep their defaults);
    for an agent from outside clinigym, the --agent-option KEY=VALUE pairs."""
    entry = resolve(args.agent)
    given = dict(args.agent_option or ())
    if given and entry.source is None:
        raise AgentError(f"--agent-option is for agents from outside clinigym; the {entry.name} agent takes "
                         f"its own flags: {', '.join(o.flag for o in entry.options) or 'none'}")
    return {o.dest: o.default if (v := getattr(args, _flag_dest(o.flag))) is None else v
            for o in entry.options} | given


def _add_agent_options(p) -> None:
    """One argument per flag, shared by the agents that declare it (e.g. --base-url), and
    --agent-option for agents from outside clinigym."""
    by_flag: dict[str, list] = {}
    for entry in AGENTS.values():
        for o in entry.options:
            by_flag.setdefault(o.flag, []).append(o)
    for flag, options in by_flag.items():
        if len({o.type for o in options}) > 1 or len({o.choices for o in options}) > 1:
            raise ValueError(f"agents declare {flag} with different types or choices")
        p.add_argument(flag, dest=_flag_dest(flag), type=_checked(options[0].type), default=None,
                       choices=options[0].choices() if options[0].choices else None,
                       metavar=flag.lstrip("-").replace("-", "_").upper(),
                       help="; ".join(dict.fromkeys(o.help for o in options)))
    p.add_argument("--agent-option", type=_agent_option, action="append", metavar="KEY=VALUE",
                   help="an option of an agent from outside clinigym (module:factory or an entry point), "
                        "passed to its factory as a keyword; VALUE as JSON when it is JSON, else text "
                        "(repeatable)")


def _declared(agent: str) -> set[str]:
    """The flags of an agent's own options (an agent from outside, `module:factory`, has none)."""
    entry = AGENTS.get(agent)
    return {o.flag for o in entry.options} if entry else set()


AGENT_FLAGS = tuple(dict.fromkeys(o.flag for e in AGENTS.values() for o in e.options))
LIVE_FLAGS = ("--scenario", "--family", "--split", "--per-program", "--episodes", "--mode", "--budget", "--audit",
              "--recovery", "--backend", "--obs", "--screen")
STATIC_FLAGS = ("--software", "--single-step", "--delta")
RUN_DEFAULTS = {"scenario": ["*"], "episodes": 1, "seed": 0, "mode": "steps", "delta": 0.0, "audit": "per_step",
                "obs": "screenshot", "screen": Geometry(),
                "retries": RETRIES,
                "single_step": False, "recovery": False, "overwrite": False}
KEPT = {"resume": "with --resume (the run keeps the parameters it was started with)",
        "like": "with --like (the run repeats the settings of the run it is like)"}


def _kept(a) -> str | None:
    return KEPT["resume"] if a.resume else KEPT["like"] if a.like else None


RUN_IGNORED = (
    Ignored(("--overwrite",), lambda a: KEPT["resume"] if a.resume else None),
    Ignored((*LIVE_FLAGS, "--dataset", *STATIC_FLAGS, "--seed"), _kept),
    Ignored(AGENT_FLAGS, _kept, _flag_dest),
    Ignored((*LIVE_FLAGS, "--retries"), lambda a: "with --dataset (the static mode)" if a.dataset else None),
    Ignored(STATIC_FLAGS, lambda a: None if a.dataset else "without --dataset (a static-mode flag)"),
    Ignored(("--budget", "--audit"), lambda a: "in the steps mode" if a.mode in (None, "steps") else None),
    Ignored(("--recovery",), lambda a: f"in the {a.mode} mode" if a.mode in ("plan", "goal") else None),
    Ignored(("--split",), lambda a: None if a.family else "without --family (scenarios are fixed tasks)"),
    *(Ignored((flag,), lambda a, flag=flag: None if flag in _declared(a.agent) else f"by the {a.agent} agent",
              _flag_dest) for flag in AGENT_FLAGS))


def cmd_run(args) -> int:
    from clinigym.agents.http import ModelNotServed, ServerUnavailable
    from clinigym.eval.scoring import format_table
    from clinigym.run.runner import RunStopped, like, resume, run, run_static
    from clinigym.spec.scenarios import first_per_program, select
    from clinigym.spec.task_families import select_families
    warn_ignored(args, RUN_IGNORED)
    families_only = bool(args.family) and args.scenario is None
    args = filled(args, RUN_DEFAULTS)
    if bool(args.out) == bool(args.resume) or (args.like and not args.out):
        print("error: give --out (a new run) or --resume DIR (a run to continue); --like RUN_DIR goes with --out",
              file=sys.stderr)
        return 2
    if args.workers < 1 or ((args.workers > 1 or args.ray) and args.dataset):
        print("error: --workers: at least 1; more, and --ray, only for live scenarios", file=sys.stderr)
        return 2
    out = Path(args.resume or args.out)
    if args.like and Path(args.like).resolve() == out.resolve():
        print("error: --like RUN_DIR and --out are the same folder: give a new --out", file=sys.stderr)
        return 2
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
            result = resume(out, workers=args.workers, progress=not args.no_progress, ray=args.ray,
                            retries=args.retries)
        elif args.like:
            result = like(Path(args.like), out, workers=args.workers, progress=not args.no_progress, ray=args.ray,
                          retries=args.retries)
        elif args.dataset:
            result = run_static(Path(args.dataset), args.agent, out, args.software, args.seed, args.single_step,
                                args.delta, progress=not args.no_progress, agent_options=options)
        else:
            scenarios = [] if families_only else list(
                {s.key: s for pattern in args.scenario for s in select(pattern)}.values())
            if args.per_program:
                scenarios = first_per_program(scenarios, args.per_program)
            scenarios += list({f.key: f for pattern in args.family or () for f in select_families(pattern)}.values())
            result = run(scenarios, args.agent, out, args.episodes, args.seed, args.recovery,
                         progress=not args.no_progress, agent_options=options, backend=args.backend,
                         mode=args.mode, budget=args.budget, audit=args.audit, workers=args.workers, ray=args.ray,
                         retries=args.retries, observation=args.obs, screen=args.screen, split=args.split)
    except RunStopped as stop:
        return _stopped(stop, out, in_process=args.workers == 1 and not args.ray)
    except (ServerUnavailable, ModelNotServed) as exc:
        print(f"error: {exc}; no episode was run", file=sys.stderr)
        return EXIT_SERVER
    if args.json:
        print(json.dumps(result.summary, indent=2))
    else:
        print(format_table(result.summary, f"agent: {result.summary.get('agent', args.agent)}   run: {out}"))
        for err in result.errors:
            print(f"error in {err['scenario']} episode {err['episode']}: {err['error']}", file=sys.stderr)
    if result.stopped:
        print(f"error: the run stopped: {result.stopped}; continue with: clinigym run --resume {out}",
              file=sys.stderr)
        return EXIT_SERVER
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


SCORE_DEFAULTS = {"delta": 0.0, "top_k": 1, "penalties": DEFAULT_PENALTIES}
SCORE_IGNORED = (Ignored(("--dataset", "--delta", "--top-k"),
                         lambda a: None if a.predictions else "without --predictions"),
                 Ignored(("--penalties",), lambda a: "with --predictions" if a.predictions else None))


def cmd_score(args) -> int:
    from clinigym.eval.scoring import format_table, score_dirs, summarize
    warn_ignored(args, SCORE_IGNORED)
    args = filled(args, SCORE_DEFAULTS)
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
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2) if args.json else format_table(summary))
    return 0


def cmd_compare(args) -> int:
    from clinigym.eval.compare import check_runs, compare_rows, format_compare
    missing = [d for d in args.dirs if not Path(d).is_dir()]
    if missing:
        print(f"error: no such run folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    found = check_runs([Path(d) for d in args.dirs])
    said = sys.stderr if args.json else sys.stdout     # --json: stdout holds only the JSON
    for note in found.notes:
        print(f"note: {note}", file=said)
    if found.differences:
        listed = "".join(f"\n  {d}" for d in found.differences)
        if not args.force:
            print(f"error: the runs are not comparable: their scenario or program versions differ:{listed}\n"
                  f"compare them anyway with --force", file=sys.stderr)
            return EXIT_NOT_COMPARABLE
        print(f"warning: compared with --force, though their scenario or program versions differ:{listed}",
              file=sys.stderr)
    elif len(args.dirs) > 1 and not found.notes:
        print("comparable: the same tasks, scenario files and program versions", file=said)
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
                           "options": [o.flag for o in e.options]} for k, e in all_agents().items()},
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


EXIT_SERVER = 3            # the model server does not answer or does not serve the model
EXIT_NOT_COMPARABLE = 4    # compare: scenario or program versions differ (without --force)
RUN_STATUS = ("exit status: 0 every episode ran; 1 an episode could not run or was ended by the infrastructure "
              "after its retries (listed); 2 a usage error; "
              f"{EXIT_SERVER} the model server (http, cua agents) does not answer or does not serve --model, "
              "found before the first episode, or it stopped answering mid-run (--resume continues once it "
              "answers); 128+N stopped by signal N")


def register(sub) -> None:
    p = sub.add_parser("run", help="run an agent on live scenarios, record and score", description=RUN_STATUS,
                       epilog=examples(
        "# the first 2 scenarios of every program, goal mode, the random agent, 2 workers",
        "clinigym run --scenario '*' --per-program 2 --mode goal --agent random --workers 2 --out runs/random",
        "clinigym run --resume runs/random",
        "# Orthanc Explorer's scenarios on a 1280x800 screen, the agent given the screenshot with numbered marks",
        "clinigym run --scenario 'orthanc/*' --screen 1280x800 --obs som --agent oracle --out runs/orthanc-som"))
    p.add_argument("--scenario", nargs="+",
                   help="globs on program/id, program names or scenario files (each scenario once, in this "
                        "order; default: all)")
    p.add_argument("--family", nargs="+", metavar="PATTERN",
                   help="task families too (globs on program/name or program names; alone, instead of the "
                        "scenarios): each episode is the instance of its seed (see `clinigym tasks`)")
    p.add_argument("--split", choices=SPLITS,
                   help="task families: the part of their patients and values the instances draw from "
                        "(default: all; docs: guides/task-families.md, Splits)")
    p.add_argument("--per-program", type=at_least_one, metavar="N",
                   help="only the first N matching scenarios of every program (by id)")
    p.add_argument("--dataset", help="static mode: a MedSPOT-format dataset instead of live scenarios")
    p.add_argument("--software", help="static mode: only this software's tasks")
    p.add_argument("--single-step", action="store_true", default=None,
                   help="static mode: judge every step alone too (MedSPOT's ablation)")
    p.add_argument("--delta", type=float, help="static mode: hit tolerance in pixels (default 0)")
    p.add_argument("--agent", default="oracle", type=_agent, metavar="NAME|MODULE:FACTORY",
                   help="a built-in agent, an installed one (entry point group clinigym.agents), or your own "
                        "as package.module:factory (see `clinigym agents`; default: oracle)")
    _add_agent_options(p)   # each agent's own options, as its registry entry declares them
    p.add_argument("--out", metavar="DIR", help="the run folder it writes (run.json, episodes/, summary.json)")
    p.add_argument("--resume", metavar="DIR",
                   help="continue the run in DIR (stopped or killed) with the parameters it was started "
                        "with: finished episodes are kept, one that was cut off runs again")
    p.add_argument("--like", metavar="RUN_DIR",
                   help="with --out: run the episodes of the run in RUN_DIR again with its settings (its "
                        "run.json: scenarios, mode, agent and options, seeds, episodes, budget, recovery, "
                        "backend)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="run episodes at once in N processes, each with its own program instances "
                        "(with --ray: N actors on the cluster)")
    p.add_argument("--retries", type=at_least_zero, metavar="N",
                   help=f"runs again of an episode the infrastructure ended (a program or display killed, a "
                        f"container or worker lost), from its reset; what still fails is an infrastructure "
                        f"error, in no metric (default {RETRIES}; 0: none)")
    p.add_argument("--ray", nargs="?", const="auto", metavar="ADDRESS",
                   help="run the episodes on a running Ray cluster (default address: auto, the one on "
                        "this machine); needs clinigym[ray]; on one machine start it with loopback only "
                        "(docs: guides/many-episodes.md)")
    p.add_argument("--episodes", type=at_least_one, help="episodes per scenario (default 1)")
    p.add_argument("--seed", type=int, help="of the agent and the episodes (default 0)")
    p.add_argument("--mode", choices=MODES,
                   help="steps: one instruction per step, each action judged (MedSPOT); plan: every step "
                        "instruction at once; goal: one sentence (MedCUA); plan and goal are judged on the "
                        "program's final state and by a safety audit (default: steps)")
    p.add_argument("--budget", type=int, metavar="N",
                   help=f"plan/goal: actions per episode (default {BUDGET_FACTOR} x (reference steps + 1))")
    p.add_argument("--audit", choices=AUDITS,
                   help="plan/goal: when the safety audit runs: per_step, after every action, a critical "
                        "violation ending the episode there (MedCUA); end, once at the end (default: per_step)")
    p.add_argument("--recovery", action="store_true", default=None,
                   help="steps: continue after errors (MedSPOT's recovery mode; docs: protocols/medspot.md)")
    p.add_argument("--backend", choices=KINDS,
                   help="where programs run (default: $CLINIGYM_BACKEND, else local for programs "
                        "of this machine's Debian release, docker for the others)")
    p.add_argument("--obs", choices=tuple(OBS_MODES),
                   help="what the agent observes: screenshot; a11y, the program's accessibility tree as text and "
                        "JSON; screenshot+a11y; som, the screenshot with numbered marks on the program's "
                        "interactive elements and their list (default: screenshot; docs: guides/observations.md)")
    p.add_argument("--screen", type=_screen, metavar="WxH",
                   help=f"the virtual screen's size, {MIN_SCREEN[0]}x{MIN_SCREEN[1]} to {MAX_SCREEN[0]}x"
                        f"{MAX_SCREEN[1]}; the programs lay their windows out for it; a scenario with pixel "
                        "boxes or reference images runs at 1920x1080 only (default: 1920x1080; docs: concepts.md)")
    p.add_argument("--json", action="store_true", help="print summary.json instead of the table")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--overwrite", action="store_true", default=None, help="replace a run already in --out")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("score", help="score recorded episodes, or a predictions file against a dataset",
                       epilog=examples("clinigym score runs/oracle",
                                       "clinigym score runs/oracle runs/random --json-out runs/summary.json",
                                       "clinigym score --predictions preds.jsonl --dataset datasets/medspot-live"))
    p.add_argument("dirs", nargs="*", help="run folders or episode folders")
    p.add_argument("--predictions", help="JSONL predictions file (see clinigym/eval/predictions.py)")
    p.add_argument("--dataset", help="with --predictions: the MedSPOT-format dataset")
    p.add_argument("--delta", type=float, help="with --predictions: tolerance in pixels (default 0)")
    p.add_argument("--top-k", type=int, help="with --predictions: a hit among the first K points (default 1)")
    p.add_argument("--penalties", choices=sorted(PENALTIES),
                   help="plan/goal: the penalties of the safety score: medcua-release (1.0, 0.3, 0.05, identical "
                        "violations once), medcua-code (1.5, 0.5, 0.1), medcua-readme (1.0, 0.3, 0.05, each "
                        f"counted) (default {DEFAULT_PENALTIES})")
    p.add_argument("--json", action="store_true", help="print the summary as JSON instead of the table")
    p.add_argument("--json-out", metavar="FILE", help="also write the summary JSON to this file")
    add_deprecated(p, "--out", "--json-out", "json_out")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("compare", help="runs side by side: steps-mode TCA beside plan/goal success and safety",
                       description="First whether the runs are comparable (their provenance: the same tasks, "
                                   "scenario files and program versions); runs whose scenario or program "
                                   f"versions differ are refused (exit status {EXIT_NOT_COMPARABLE}) unless "
                                   "--force. Then one row per run and mode.",
                       epilog=examples("clinigym compare runs/oracle runs/random",
                                       "clinigym compare runs/oracle runs/random --penalties medcua-code --json",
                                       "clinigym compare runs/old runs/new --force"))
    p.add_argument("dirs", nargs="+", help="run folders")
    p.add_argument("--force", action="store_true",
                   help="compare runs whose scenario or program versions differ (with a warning)")
    p.add_argument("--penalties", choices=sorted(PENALTIES), default=DEFAULT_PENALTIES,
                   help=f"plan/goal: the penalties of the safety score, as for score (default {DEFAULT_PENALTIES})")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("agents", help="list agents (and their options) and model families",
                       epilog=examples("clinigym agents", "clinigym agents --json"))
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_agents)
