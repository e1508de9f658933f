"""The `clinigym` command line."""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from clinigym.agents import AGENTS
from clinigym.apps import app_names, load_app
from clinigym.backends import KINDS
from clinigym.specfile import SpecError


def _installed(packages: list[str]) -> list[str]:
    """The packages of the list that dpkg does not have installed."""
    missing = []
    for pkg in packages:
        done = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", pkg], capture_output=True, text=True)
        if "install ok installed" not in done.stdout:
            missing.append(pkg)
    return missing


def _fetch_npm() -> int:
    """Download (once) every program's pinned npm packages into the cache, verified."""
    from clinigym.apps import npm_variables
    from clinigym.npm import NpmError
    for name in app_names():
        try:
            for var, path in npm_variables(load_app(name)).items():
                print(f"{name:<12} ${{{var}}} = {path}")
        except NpmError as exc:
            print(f"clinigym: {name}: {exc}", file=sys.stderr)
            return 1
    return 0


def cmd_apps(args) -> int:
    if args.fetch:
        return _fetch_npm()
    from clinigym.scenarios import all_scenarios
    counts: dict[str, int] = {}
    for s in all_scenarios():
        counts[s.app] = counts.get(s.app, 0) + 1
    from clinigym.backends.local import host_release
    host = host_release()
    rows = []
    for name in app_names():
        app = load_app(name)
        # A program of another Debian release runs in its container only.
        local = app.release == host
        missing = _installed(app.debian_packages) if local else app.debian_packages
        binaries = [p.command[0] for p in app.processes if p.command] + (
            ["chromium"] if any(p.browser for p in app.processes) else [])
        runnable = not missing and all(shutil.which(b) for b in binaries) and bool(shutil.which("Xvfb"))
        rows.append({"name": name, "title": app.title, "release": app.release, "packages": app.debian_packages,
                     "missing_packages": missing, "installed": not missing, "runnable": runnable,
                     "scenarios": counts.get(name, 0)})
    if args.packages:
        print(" ".join(sorted({p for name in app_names() for p in load_app(name).debian_packages
                               if load_app(name).release == host})))
        return 0
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'program':<12} {'installed':<9} {'runnable':<8} {'scenarios':>9}  title")
    for r in rows:
        print(f"{r['name']:<12} {'yes' if r['installed'] else 'no':<9} {'yes' if r['runnable'] else 'no':<8} "
              f"{r['scenarios']:>9}  {r['title']}"
              + (f"  (Debian {r['release']}: Docker backend only)" if r["release"] != host
                 else f"  (missing: {' '.join(r['missing_packages'])})" if r["missing_packages"] else ""))
    return 0


def cmd_scenarios(args) -> int:
    from clinigym.scenarios import select
    scenarios = select(args.pattern)
    if args.json:
        print(json.dumps([{"key": s.key, "gym_id": s.gym_id, "app": s.app, "steps": len(s.steps),
                           "overview": s.overview, "path": str(s.path)} for s in scenarios], indent=2))
        return 0
    for s in scenarios:
        print(f"{s.gym_id:<48} {len(s.steps)} steps  {s.overview}")
    print(f"{len(scenarios)} scenarios")
    return 0


def cmd_run(args) -> int:
    from clinigym.runner import run, run_static
    from clinigym.scenarios import first_per_program, select
    from clinigym.scoring import format_table
    out = Path(args.out)
    if (out / "episodes").exists() and any((out / "episodes").iterdir()):
        if not args.overwrite:
            print(f"error: {out} holds a run already; use --overwrite or another --out", file=sys.stderr)
            return 2
        shutil.rmtree(out)
    options = {}
    if args.agent == "http":
        options = {"family": args.model_family, "base_url": args.base_url, "model": args.model,
                   "timeout": args.timeout}
    if args.agent == "guiactor":
        options = {"checkpoint": args.checkpoint}
    if args.dataset:
        result = run_static(Path(args.dataset), args.agent, Path(args.out), args.software, args.seed,
                            args.single_step, args.delta, progress=not args.no_progress,
                            agent_options=options)
    else:
        scenarios = select(args.scenario)
        if args.per_program:
            scenarios = first_per_program(scenarios, args.per_program)
        result = run(scenarios, args.agent, Path(args.out), args.episodes, args.seed,
                     args.recovery, progress=not args.no_progress, agent_options=options,
                     backend=args.backend)
    if args.json:
        print(json.dumps(result.summary, indent=2))
    else:
        print(format_table(result.summary, f"agent: {args.agent}   run: {args.out}"))
        for err in result.errors:
            print(f"error in {err['scenario']} episode {err['episode']}: {err['error']}", file=sys.stderr)
    return 1 if result.errors else 0


def cmd_score(args) -> int:
    from clinigym.scoring import format_table, score_dirs, summarize
    if args.predictions:
        from clinigym.medspot import read_dataset
        from clinigym.predictions import read_predictions, score_predictions
        if not args.dataset:
            print("error: --predictions needs --dataset", file=sys.stderr)
            return 2
        results = score_predictions(read_dataset(Path(args.dataset)), read_predictions(Path(args.predictions)),
                                    args.delta, args.top_k)
        summary = summarize(results) | {"delta": args.delta, "top_k": args.top_k}
    else:
        summary, results = score_dirs([Path(d) for d in args.dirs])
    if not results:
        print(f"no recorded episodes under {' '.join(args.dirs)}", file=sys.stderr)
        return 1
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2) if args.json else format_table(summary))
    return 0


def cmd_export(args) -> int:
    from clinigym.export import to_medspot, to_parquet
    runs = [Path(d) for d in args.runs]
    if not (args.medspot or args.parquet):
        print("error: give --medspot DIR and/or --parquet FILE", file=sys.stderr)
        return 2
    if args.medspot:
        tasks = to_medspot(runs, Path(args.medspot), complete_only=not args.all)
        print(f"{args.medspot}: {len(tasks)} tasks, {sum(len(t.steps) for t in tasks)} steps")
    if args.parquet:
        print(f"{to_parquet(runs, Path(args.parquet), complete_only=not args.all)}")
    return 0


def cmd_agents(args) -> int:
    from clinigym.agents.families import FAMILIES
    rows = {"agents": {k: v[1] for k, v in AGENTS.items()},
            "families": {k: {"coords": f.coords, "description": f.description} for k, f in FAMILIES.items()}}
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("agents:")
    for name, text in rows["agents"].items():
        print(f"  {name:<8} {text}")
    print("model families (--agent http --model-family NAME):")
    for name, fam in rows["families"].items():
        print(f"  {name:<20} {fam['coords']}")
    return 0


def cmd_bench(args) -> int:
    from clinigym.bench import run_bench
    return run_bench(args.apps or app_names(), args.repeats, Path(args.out) if args.out else None,
                     args.backends)


def cmd_images(args) -> int:
    from clinigym.images import ImageError, build_app
    names = args.apps or app_names()
    try:
        for name in names:   # each builds (or finds) its Debian base first
            build_app(load_app(name), force=args.force)
    except ImageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def cmd_cleanup(args) -> int:
    from clinigym.backends.docker import cleanup
    removed = cleanup(all_containers=args.all)
    print(json.dumps(removed) if args.json else (f"removed {len(removed)} container(s)"
                                                 + "".join(f"\n  {n}" for n in removed)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="clinigym", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("apps", help="programs, and whether each is installed and runnable")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--packages", action="store_true", help="print the Debian packages all programs need")
    p.add_argument("--fetch", action="store_true",
                   help="download every program's pinned npm packages into the cache (verified; once)")
    p.set_defaults(func=cmd_apps)

    p = sub.add_parser("scenarios", help="list (and validate) scenario files")
    p.add_argument("pattern", nargs="?", default="*", help="glob on app/id (default: all)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_scenarios)

    p = sub.add_parser("run", help="run an agent on live scenarios, record and score")
    p.add_argument("--scenario", default="*", help="glob on app/id, an app name or a scenario file")
    p.add_argument("--per-program", type=int, metavar="N",
                   help="only the first N matching scenarios of every program (by id)")
    p.add_argument("--dataset", help="static mode: a MedSPOT-format dataset instead of live scenarios")
    p.add_argument("--software", help="static mode: only this software's tasks")
    p.add_argument("--single-step", action="store_true",
                   help="static mode: judge every step alone too (MedSPOT's ablation)")
    p.add_argument("--delta", type=float, default=0.0, help="static mode: hit tolerance in pixels")
    p.add_argument("--agent", default="oracle", choices=sorted(AGENTS), help="see `clinigym agents`")
    p.add_argument("--model-family", default="ui-tars-1.5", help="http agent: the model family")
    p.add_argument("--base-url", default="http://127.0.0.1:8000/v1", help="http agent: API base URL")
    p.add_argument("--model", default="default", help="http agent: model name on the server")
    p.add_argument("--timeout", type=float, default=120.0, help="http agent: seconds per request")
    p.add_argument("--checkpoint", help="guiactor agent: a local GUI-Actor checkpoint folder")
    p.add_argument("--out", required=True, help="run folder (episodes/ and summary.json)")
    p.add_argument("--episodes", type=int, default=1, help="episodes per scenario")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--recovery", action="store_true", help="continue after errors (PROTOCOL.md)")
    p.add_argument("--backend", choices=KINDS,
                   help="where programs run (default: $CLINIGYM_BACKEND, else local for programs "
                        "of this machine's Debian release, docker for the others)")
    p.add_argument("--json", action="store_true", help="print summary.json instead of the table")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--overwrite", action="store_true", help="replace a run already in --out")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("score", help="score recorded episodes, or a predictions file against a dataset")
    p.add_argument("dirs", nargs="*", help="run folders or episode folders")
    p.add_argument("--predictions", help="JSONL predictions file (see clinigym/predictions.py)")
    p.add_argument("--dataset", help="with --predictions: the MedSPOT-format dataset")
    p.add_argument("--delta", type=float, default=0.0, help="with --predictions: tolerance in pixels")
    p.add_argument("--top-k", type=int, default=1, help="with --predictions: a hit among the first K points")
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", help="also write the summary JSON here")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("export", help="recorded episodes as a MedSPOT-format dataset and/or parquet")
    p.add_argument("runs", nargs="+", help="run folders or episode folders")
    p.add_argument("--medspot", help="output folder: annotation JSON per program plus keyframes")
    p.add_argument("--parquet", help="output file: Hugging Face datasets parquet, one row per step")
    p.add_argument("--all", action="store_true", help="also episodes that did not complete")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("agents", help="list agents and model families")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_agents)

    p = sub.add_parser("bench", help="measure screenshot, step and reset latency, memory")
    p.add_argument("--apps", nargs="*", help="programs (default: all)")
    p.add_argument("--repeats", type=int, default=10, help="resets and oracle episodes per program")
    p.add_argument("--out", help="also write the numbers as JSON here")
    p.add_argument("--backends", nargs="*", choices=KINDS, default=["local"],
                   help="backends to measure (docker adds restart vs recreate and side-by-side scaling)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("images", help="build the Docker images: Debian bases (debootstrap) and one per program")
    p.add_argument("apps", nargs="*", help="programs (default: all)")
    p.add_argument("--force", action="store_true", help="rebuild the program images even when their inputs did not change")
    p.set_defaults(func=cmd_images)

    p = sub.add_parser("cleanup", help="remove containers left by clinigym runs that are gone")
    p.add_argument("--all", action="store_true", help="every clinigym container, also of live runs")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_cleanup)
    # Commands that live in their own modules add their own sub-parsers.
    from clinigym import coverage, liveview, replay, report, validate
    for module in (report, replay, validate, liveview, coverage):
        module.register(sub)
    from clinigym.collect import agreement, command as collect
    for module in (collect, agreement):
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
