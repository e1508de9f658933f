"""Programs: `programs` (once `apps`), `images`, `cleanup`, `view`."""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys

from clinigym.cli.conventions import Ignored, examples, program, warn, warn_ignored
from clinigym.spec.apps import app_names, load_app

IGNORED = (Ignored(("--packages", "--json"), lambda a: "with --fetch" if a.fetch else None),
           Ignored(("--json",), lambda a: "with --packages" if a.packages else None))


def _missing(packages: list[str]) -> list[str]:
    """The packages of the list that dpkg does not have installed."""
    missing = []
    for pkg in packages:
        done = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", pkg], capture_output=True, text=True)
        if "install ok installed" not in done.stdout:
            missing.append(pkg)
    return missing


def _fetch() -> int:
    """Download (once) every program's pinned npm packages into the cache, verified, and
    install its pinned Python packages into its virtualenv."""
    from clinigym.core.errors import ClinigymError
    from clinigym.runtime import npm, pyenv
    for name in app_names():
        try:
            app = load_app(name)
            for var, path in {**npm.variables(app), **pyenv.variables(app)}.items():
                print(f"{name:<12} ${{{var}}} = {path}")
        except ClinigymError as exc:
            print(f"clinigym: {name}: {exc}", file=sys.stderr)
            return 1
    return 0


def cmd_apps(args) -> int:
    if args.command == "apps":
        warn("`clinigym apps` is deprecated: use `clinigym programs` (the old name goes in the next release)")
    warn_ignored(args, IGNORED)
    if args.fetch:
        return _fetch()
    from clinigym.runtime import pyenv
    from clinigym.runtime.backends.local import host_release
    from clinigym.runtime.slots import slot_ports
    from clinigym.spec.apps import render
    from clinigym.spec.scenarios import all_scenarios
    host = host_release()
    if args.packages:
        print(" ".join(sorted({p for name in app_names() for p in load_app(name).debian_packages
                               if load_app(name).release == host})))
        return 0
    counts: dict[str, int] = {}
    for s in all_scenarios():
        counts[s.app] = counts.get(s.app, 0) + 1
    rows = []
    for name in app_names():
        app = load_app(name)
        # A program of another Debian release runs in its container only.
        missing = _missing(app.debian_packages) if app.release == host else app.debian_packages
        # ${VENV}: the program's own virtualenv, where `--fetch` installed it (not installed here).
        venv = pyenv.variables(app, make_missing=False)
        binaries = [render(p.command[0], venv) if venv else p.command[0] for p in app.processes if p.command] + (
            ["chromium"] if any(p.browser for p in app.processes) else [])
        runnable = not missing and all(shutil.which(b) for b in binaries) and bool(shutil.which("Xvfb"))
        if venv and not pyenv.is_made(app):
            missing = [*missing, "(Python packages: clinigym programs --fetch)"]
        rows.append({"name": name, "title": app.title, "release": app.release, "folder": str(app.folder),
                     "packages": app.debian_packages, "missing_packages": missing, "installed": not missing,
                     "runnable": runnable, "scenarios": counts.get(name, 0), "port_block": app.port_block,
                     "ports": slot_ports(app.port_block, 0, app.ports) if app.ports else {}})
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


def cmd_images(args) -> int:
    from clinigym.runtime.images import ImageError, build_app
    try:
        for name in args.apps or [n for n in app_names() if "docker" in load_app(n).backends]:
            build_app(load_app(name), force=args.force)   # each builds (or finds) its Debian base first
    except ImageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def cmd_cleanup(args) -> int:
    from clinigym.run.cleanup import sweep
    removed = sweep(all_containers=args.all)
    print(json.dumps(removed) if args.json else (f"removed {len(removed)} item(s)"
                                                 + "".join(f"\n  {n}" for n in removed)))
    return 0


def cmd_view(args) -> int:
    from clinigym.runtime.liveview import LiveView, find_display
    from clinigym.runtime.slots import mark_owner
    mark_owner()   # the VNC server and web bridge end with this process, however it ends
    try:
        number = find_display(args.target)
    except LookupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    with LiveView(number) as view:
        print(f"display :{number}\nopen: {view.url}\nVNC: 127.0.0.1:{view.vnc_port} "
              f"(password {view.password})\nCtrl-C stops the view (not the program)", flush=True)
        # A stop request (SIGTERM) ends the view like Ctrl-C does, closing its servers.
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        try:
            view.wait(args.duration)
        except KeyboardInterrupt:
            pass
    return 0


def register(sub) -> None:
    p = sub.add_parser("programs", aliases=["apps"], help="programs, and whether each is installed and runnable",
                       epilog=examples("clinigym programs", "clinigym programs --json",
                                       "# the Debian packages the programs of this machine's release need",
                                       "clinigym programs --packages"))
    p.add_argument("--json", action="store_true", default=None,
                   help="machine-readable output (with each program's folder, port block and first instance's ports)")
    p.add_argument("--packages", action="store_true", default=None,
                   help="print the Debian packages all programs need")
    p.add_argument("--fetch", action="store_true",
                   help="download every program's pinned npm packages into the cache (verified; once) and "
                        "install its pinned Python packages into its own virtualenv")
    p.set_defaults(func=cmd_apps)

    p = sub.add_parser("images", help="build the Docker images: Debian bases (debootstrap) and one per program",
                       epilog=examples("clinigym images", "clinigym images ginkgocadx --force"))
    p.add_argument("apps", nargs="*", type=program, metavar="PROGRAM", help="programs (default: all)")
    p.add_argument("--force", action="store_true",
                   help="rebuild the program images even when their inputs did not change")
    p.set_defaults(func=cmd_images)

    p = sub.add_parser("cleanup", help="remove what clinigym runs that are gone left: containers, processes "
                                       "(programs, X servers, window managers), display locks, work folders",
                       epilog=examples("clinigym cleanup", "clinigym cleanup --all --json"))
    p.add_argument("--all", action="store_true", help="every clinigym container too, also of live runs")
    p.add_argument("--json", action="store_true", help="print the removed items as JSON")
    p.set_defaults(func=cmd_cleanup)

    p = sub.add_parser("view", help="watch a running program live in a browser (noVNC on loopback)",
                       epilog=examples("clinigym view orthanc", "clinigym view :101 --duration 600"))
    p.add_argument("target", help="a clinigym container's name (see `docker ps`), a program name "
                                  "with one running container, or an X display such as :101")
    p.add_argument("--duration", type=float, help="stop after this many seconds (default: until Ctrl-C)")
    p.set_defaults(func=cmd_view)
