"""Recordings and datasets: `export`, `report`, `replay`, `validate`."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from clinigym.cli.conventions import examples
from clinigym.eval.similarity import DEFAULT_THRESHOLD
from clinigym.spec.cohort import SPLITS

REPLAY_THRESHOLD_HELP = f"fraction of identical pixels for a screen to match (default {DEFAULT_THRESHOLD})"


def cmd_export(args) -> int:
    from clinigym.eval.export import to_medspot, to_parquet
    runs = [Path(d) for d in args.runs]
    if not (args.medspot or args.parquet or args.training):
        print("error: give --medspot DIR, --parquet FILE and/or --training DIR", file=sys.stderr)
        return 2
    if args.split and not args.training:
        print("error: --split goes with --training", file=sys.stderr)
        return 2
    if args.training:
        from clinigym.eval.training_export import to_training
        done = to_training(runs, Path(args.training), complete_only=False, split=args.split)
        for split, n in sorted(done.rows.items()):
            print(f"{args.training}: {split}: {done.episodes[split]} episodes, {n} rows")
    if args.medspot:
        tasks = to_medspot(runs, Path(args.medspot), complete_only=not args.all)
        print(f"{args.medspot}: {len(tasks)} tasks, {sum(len(t.steps) for t in tasks)} steps")
    if args.parquet:
        print(f"{to_parquet(runs, Path(args.parquet), complete_only=not args.all)}")
    return 0


def cmd_report(args) -> int:
    from clinigym.eval.report import ReportError, build_report
    try:
        page = build_report([Path(d) for d in args.run_dirs], Path(args.out), args.gallery_limit, args.thumb_width)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(page)
    return 0


def cmd_replay(args) -> int:
    from clinigym.eval.replay import format_report, replay_episode
    from clinigym.recording import episode_folders, read_episode
    from clinigym.runtime.backends import KINDS, Backend, make_backend
    from clinigym.spec.apps import load_app

    folders = [f for d in args.episodes for f in episode_folders(Path(d))]
    if not folders:
        print(f"no recorded episodes under {' '.join(args.episodes)}", file=sys.stderr)
        return 1
    backends: dict[str, Backend] = {}   # one running program per app for all episodes
    reports, failed = [], False
    try:
        for folder in folders:
            try:
                header = read_episode(folder).header
                if header.app not in backends:   # on the backend kind the episode was recorded on
                    kind = args.backend or (header.backend if header.backend in KINDS else None)
                    backends[header.app] = make_backend(load_app(header.app), kind)
                report = replay_episode(folder, backends[header.app], args.threshold)
            # One broken episode must not hide the others' results.
            except Exception as exc:  # noqa: BLE001
                print(f"error: {folder}: {exc.__class__.__name__}: {exc}", file=sys.stderr)
                failed = True
                continue
            reports.append(report)
            if not args.json:
                print(format_report(report) + "\n")
    finally:
        for backend in backends.values():
            backend.close()
    if args.json:
        print(json.dumps([r.to_json() for r in reports], indent=2))
    return 0 if reports and not failed and all(r.all_match for r in reports) else 1


def cmd_validate(args) -> int:
    from clinigym.eval.validate import format_report, load_scenario_map, validate_dataset
    scenario_map = load_scenario_map(Path(args.scenario_map)) if args.scenario_map else None
    report = validate_dataset(Path(args.dataset), scenario_map, threshold=args.threshold, max_offset=args.max_offset,
                              progress=not args.no_progress)
    print(json.dumps(report.to_json(), indent=2) if args.json else format_report(report))
    if not report.tasks:
        print(f"no task of {args.dataset} is mapped to a live scenario", file=sys.stderr)
        return 1
    return 0 if report.flagged == 0 else 1


def register(sub) -> None:
    from clinigym.eval.report import GALLERY_LIMIT, THUMB_WIDTH
    from clinigym.eval.validate import DEFAULT_MAX_OFFSET
    from clinigym.runtime.backends import KINDS

    p = sub.add_parser("export", help="recorded episodes as a MedSPOT-format dataset, parquet, or a training set",
                       epilog=examples("clinigym export runs/oracle --medspot datasets/mine",
                                       "clinigym export runs/oracle --parquet datasets/mine.parquet --all",
                                       "clinigym export runs/train runs/test --training datasets/families"))
    p.add_argument("runs", nargs="+", help="run folders or episode folders")
    p.add_argument("--medspot", metavar="DIR",
                   help="output folder: annotation JSON per program plus keyframes")
    p.add_argument("--parquet", metavar="FILE",
                   help="output file: Hugging Face datasets parquet, one row per step (extra `datasets`)")
    p.add_argument("--training", metavar="DIR",
                   help="output folder: every field of every step and the episode's verdict, per split as "
                        "JSONL and parquet with the images and a dataset card; loads with "
                        "datasets.load_dataset(DIR) (every episode, completed or not)")
    p.add_argument("--split", choices=SPLITS, help="with --training: only the episodes of this split")
    p.add_argument("--all", action="store_true", help="also episodes that did not complete")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser(
        "report", help="an HTML/JSON/Markdown report comparing recorded runs",
        description="Score recorded runs and write report.html (self-contained: inline CSS and SVG, "
                    "no network), report.json, report.md and the per-step gallery images into --out.",
        epilog=examples("clinigym report runs/oracle runs/random --out runs/report"))
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                   help="a run folder (with episodes/) or an episode folder; one column per folder")
    p.add_argument("--out", default="report/", metavar="DIR", help="the report folder it writes (default: report/)")
    p.add_argument("--gallery-limit", type=int, default=GALLERY_LIMIT,
                   help=f"steps shown per run in the gallery (default: {GALLERY_LIMIT})")
    p.add_argument("--thumb-width", type=int, default=THUMB_WIDTH,
                   help=f"largest width of the gallery images in pixels (default: {THUMB_WIDTH})")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "replay", help="re-run recorded live episodes and check that screens and outcomes reproduce",
        description="Re-execute each recorded episode's actions on the live program from a fresh reset; "
                    "per action, compare the live screen before it with the recorded one and the outcome "
                    "with the recorded outcome. Exit 0 when every action matches, 1 otherwise.",
        epilog=examples("clinigym replay runs/oracle", "clinigym replay runs/oracle --backend docker --json"))
    p.add_argument("episodes", nargs="+", help="episode folders, or run folders holding episodes")
    p.add_argument("--json", action="store_true", help="print the reports as JSON")
    p.add_argument("--backend", choices=KINDS,
                   help="where to run the program (default: the backend the episode was recorded on)")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, help=REPLAY_THRESHOLD_HELP)
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser(
        "validate", help="check a static MedSPOT-format dataset against the live programs",
        description="Execute each mapped task's ground-truth actions on its live program and compare, per "
                    "step, the keyframe with the live screen, the target's content and place, and the live "
                    "transition. Exit 0 when no step is flagged, 1 otherwise.",
        epilog=examples("clinigym validate datasets/medspot-live",
                        "clinigym validate datasets/mine --scenario-map map.yaml --json"))
    p.add_argument("dataset", help="folder with <Software>_Annotation.json files and the images they name")
    p.add_argument("--scenario-map", help="YAML or JSON file: {\"<Software>/<index>\": \"<program>/<id>\"}; "
                                          "default: the scenario each exported task names")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, help=REPLAY_THRESHOLD_HELP)
    p.add_argument("--max-offset", type=float, default=DEFAULT_MAX_OFFSET,
                   help=f"pixels a target may be away from the box (default {DEFAULT_MAX_OFFSET:g})")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_validate)
