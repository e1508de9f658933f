"""The `clinigym` command line."""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from clinigym.apps import app_names, load_app
from clinigym.specfile import SpecError


def _installed(packages: list[str]) -> list[str]:
    """The packages of the list that dpkg does not have installed."""
    missing = []
    for pkg in packages:
        done = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", pkg], capture_output=True, text=True)
        if "install ok installed" not in done.stdout:
            missing.append(pkg)
    return missing


def cmd_apps(args) -> int:
    from clinigym.scenarios import all_scenarios
    counts: dict[str, int] = {}
    for s in all_scenarios():
        counts[s.app] = counts.get(s.app, 0) + 1
    rows = []
    for name in app_names():
        app = load_app(name)
        missing = _installed(app.debian_packages)
        binaries = [p.command[0] for p in app.processes if p.command] + (
            ["chromium"] if any(p.browser for p in app.processes) else [])
        runnable = not missing and all(shutil.which(b) for b in binaries) and bool(shutil.which("Xvfb"))
        rows.append({"name": name, "title": app.title, "packages": app.debian_packages,
                     "missing_packages": missing, "installed": not missing, "runnable": runnable,
                     "scenarios": counts.get(name, 0)})
    if args.packages:
        print(" ".join(sorted({p for name in app_names() for p in load_app(name).debian_packages})))
        return 0
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'program':<12} {'installed':<9} {'runnable':<8} {'scenarios':>9}  title")
    for r in rows:
        print(f"{r['name']:<12} {'yes' if r['installed'] else 'no':<9} {'yes' if r['runnable'] else 'no':<8} "
              f"{r['scenarios']:>9}  {r['title']}"
              + (f"  (missing: {' '.join(r['missing_packages'])})" if r["missing_packages"] else ""))
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
    from clinigym.runner import run
    from clinigym.scenarios import select
    from clinigym.scoring import format_table
    result = run(select(args.scenario), args.agent, Path(args.out), args.episodes, args.seed,
                 args.recovery, progress=not args.no_progress)
    if args.json:
        print(json.dumps(result.summary, indent=2))
    else:
        print(format_table(result.summary, f"agent: {args.agent}   run: {args.out}"))
        for err in result.errors:
            print(f"error in {err['scenario']} episode {err['episode']}: {err['error']}", file=sys.stderr)
    return 1 if result.errors else 0


def cmd_score(args) -> int:
    from clinigym.scoring import format_table, score_dirs
    summary, results = score_dirs([Path(d) for d in args.dirs])
    if not results:
        print(f"no recorded episodes under {' '.join(args.dirs)}", file=sys.stderr)
        return 1
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2) if args.json else format_table(summary))
    return 0


def cmd_bench(args) -> int:
    from clinigym.bench import run_bench
    return run_bench(args.apps or app_names(), args.repeats, Path(args.out) if args.out else None)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="clinigym", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("apps", help="programs, and whether each is installed and runnable")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--packages", action="store_true", help="print the Debian packages all programs need")
    p.set_defaults(func=cmd_apps)

    p = sub.add_parser("scenarios", help="list (and validate) scenario files")
    p.add_argument("pattern", nargs="?", default="*", help="glob on app/id (default: all)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_scenarios)

    p = sub.add_parser("run", help="run an agent on live scenarios, record and score")
    p.add_argument("--scenario", default="*", help="glob on app/id, an app name or a scenario file")
    p.add_argument("--agent", default="oracle", help="oracle or random")
    p.add_argument("--out", required=True, help="run folder (episodes/ and summary.json)")
    p.add_argument("--episodes", type=int, default=1, help="episodes per scenario")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--recovery", action="store_true", help="continue after errors (PROTOCOL.md)")
    p.add_argument("--json", action="store_true", help="print summary.json instead of the table")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("score", help="score recorded episodes (run folders or episode folders)")
    p.add_argument("dirs", nargs="+")
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", help="also write the summary JSON here")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("bench", help="measure screenshot, step and reset latency, memory")
    p.add_argument("--apps", nargs="*", help="programs (default: all)")
    p.add_argument("--repeats", type=int, default=10, help="resets and oracle episodes per program")
    p.add_argument("--out", help="also write the numbers as JSON here")
    p.set_defaults(func=cmd_bench)
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
