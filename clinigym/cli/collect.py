"""Demonstrations: `collect` (the collection and review page), `agreement`."""
from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from clinigym.cli.conventions import Ignored, add_deprecated, examples, program, warn_ignored

COLLECT_IGNORED = (Ignored(("--program", "--scenario", "--task", "--goal", "--id", "--out", "--dataset", "--parquet",
                            "--backend", "--no-ocr"), lambda a: "with --review" if a.review else None),)
COLLECT_DATASET = "datasets/collected"


def _serve(server, what: str) -> int:
    print(f"{what}\nopen {server.url}", flush=True)
    server.start()
    try:
        threading.Event().wait()     # until Ctrl-C
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def cmd_collect(args) -> int:
    from clinigym.collect.server import CollectServer
    warn_ignored(args, COLLECT_IGNORED)
    if args.review:
        from clinigym.collect.review import ReviewSession
        try:
            session = ReviewSession(Path(args.review))
        except (OSError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return _serve(CollectServer(session, args.port, verbose=args.verbose),
                      f"reviewing {args.review}; corrections go to {session.out}")
    if not args.program:
        print("error: give --program PROGRAM (or --review EPISODE_DIR)", file=sys.stderr)
        return 2
    from clinigym.collect.session import CollectSession
    try:
        session = CollectSession(args.program, args.scenario, args.task or "", scenario_dir=args.out,
                                 dataset=args.dataset or COLLECT_DATASET, parquet=args.parquet, scenario_id=args.id,
                                 use_ocr=not args.no_ocr, backend=args.backend, goal=args.goal or "")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        session.open()

        def on_result(result: dict) -> None:
            shown = {k: v for k, v in result.items() if k != "scenario_yaml"}
            print(json.dumps(shown), flush=True)

        server = CollectServer(session, args.port, verbose=args.verbose, on_result=on_result)
        return _serve(server, f"{session.app.title}: program ready"
                              + (f" at the start of {session.start.key}" if session.start else ""))
    finally:
        session.close()


def cmd_agreement(args) -> int:
    from clinigym.collect.agreement import compare, format_table
    try:
        result = compare(Path(args.a), Path(args.b), args.threshold)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result.to_json(), indent=2) if args.json else format_table(result))
    return 0 if result.steps else 1


def register(sub) -> None:
    from clinigym.collect.agreement import AGREE_IOU
    from clinigym.runtime.backends import KINDS
    p = sub.add_parser(
        "collect", help="demonstrate a task on a live program in a local web page; write a scenario",
        description="Start the program and serve a page on 127.0.0.1 (a random token in the URL) that shows "
                    "the live screen and forwards mouse and keyboard. Each action is recorded with its "
                    "pre-action screenshot and a proposed target box to accept or adjust, with an "
                    "instruction. End writes scenarios/<program>/<id>.yaml (or into --out), replays it with the "
                    "oracle and appends it to a MedSPOT-format dataset and its parquet export. With a goal "
                    "sentence (--goal or on the page), the records the demonstration changed become the "
                    "task's final-state checks and safety declaration, verified on the live program, so "
                    "that it runs in the plan and goal modes too. "
                    "--review EPISODE_DIR opens a recorded episode instead, to fix wrong ground truth.",
        epilog=examples("clinigym collect --program orthanc --task 'Delete a study' "
                        "--goal 'Delete the CT study of PHANTOM^ALICE'",
                        "clinigym collect --program dicomscope --scenario dicomscope/medspot-01-flip --out mine",
                        "clinigym collect --review runs/oracle/episodes/0001-orthanc-open-patient-study"))
    p.add_argument("--program", type=program, help="the program (see `clinigym programs`)")
    add_deprecated(p, "--app", "--program", "program", type=program)
    p.add_argument("--scenario", help="start from this scenario's start state (its args and set-up steps)")
    p.add_argument("--task", help="the task overview (editable on the page)")
    p.add_argument("--goal", help="the goal sentence, as a clinician would delegate the task (editable on the "
                                  "page; default: the --scenario's)")
    p.add_argument("--id", help="the scenario id (file name); default: from the overview")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--out", metavar="DIR", help="folder for the scenario file (default: scenarios/<program>/ of the "
                                                "built-in library in a checkout, else of the current folder)")
    add_deprecated(p, "--out-dir", "--out", "out")
    p.add_argument("--dataset", help=f"MedSPOT-format dataset the task is appended to (default {COLLECT_DATASET})")
    p.add_argument("--parquet", help="parquet export (default <dataset>/collected.parquet)")
    p.add_argument("--backend", choices=KINDS,
                   help="where the program runs (default: see clinigym.runtime.backends)")
    p.add_argument("--no-ocr", action="store_true", default=None, help="no OCR text boxes as proposals (faster)")
    p.add_argument("--review", metavar="EPISODE_DIR", help="review a recorded episode instead")
    p.add_argument("--verbose", action="store_true", help="log every HTTP request")
    p.set_defaults(func=cmd_collect)

    p = sub.add_parser(
        "agreement", help="compare two annotators' MedSPOT-format files of the same tasks",
        description="Per-step box IoU of two MedSPOT-format annotation files (tasks by index, steps by "
                    "step_id), mean IoU and the agreement rate (IoU >= threshold).",
        epilog=examples("clinigym agreement alice/DICOMscope_Annotation.json bob/DICOMscope_Annotation.json"))
    p.add_argument("a", help="annotator A's <Software>_Annotation.json")
    p.add_argument("b", help="annotator B's <Software>_Annotation.json")
    p.add_argument("--threshold", type=float, default=AGREE_IOU, help="IoU for agreement (default 0.5)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.set_defaults(func=cmd_agreement)
