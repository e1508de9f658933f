"""The supervisor inside a clinigym container (under docker-init, which reaps orphans).

It starts the X display on the number the host reserved, with its socket in the
X socket folder the host shares, and a window manager; then it answers the
host's requests on a Unix socket in the shared work folder: spawn a program
process, run a command to completion, report which processes exited, kill them.
One JSON request per connection, one JSON answer.

Standard library only, Python 3.9+: it runs on the container's own python3
(Debian 11 has 3.9), from the repository mounted read-only.
"""
import argparse
import json
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time

PROCS = {}   # name -> Popen
LOCK = threading.Lock()
DISPLAY = {}  # "xvfb", "wm" -> Popen


def _killpg(proc):
    # The whole group, also when its leader has exited already: a program that died with its
    # display leaves helpers that need no display (DICOMscope's DICOM receiver).
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:   # no process of the group is left
        pass
    proc.wait()


def spawn(req):
    with LOCK:
        old = PROCS.pop(req["name"], None)
        if old is not None:
            _killpg(old)
        with open(req["log"], "ab") as log:
            proc = subprocess.Popen(req["argv"], cwd=req["cwd"], env=req["env"], stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        PROCS[req["name"]] = proc
    return {"pid": proc.pid}


def _stopped(groups):
    """Names of the groups (pgid -> name) with a process stopped by a signal (state T)."""
    found = set()
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):   # not a process, or ended meanwhile
            continue
        if fields[0] == "T" and int(fields[2]) in groups:
            found.add(groups[int(fields[2])])
    return sorted(found)


def status(req):
    with LOCK:
        procs = {name: p.poll() for name, p in PROCS.items()}
        groups = {p.pid: name for name, p in PROCS.items() if p.poll() is None}
    return {"procs": procs, "display": {k: p.poll() for k, p in DISPLAY.items()}, "stopped": _stopped(groups)}


def kill(req):
    """SIGKILL process groups; without `forget` the killed process stays listed with its
    exit status (a crash, as the host's tests cause it)."""
    names = req.get("names")
    with LOCK:
        for name in list(PROCS):
            if names is None or name in names:
                _killpg(PROCS[name])
                if req.get("forget", True):
                    del PROCS[name]
    return {}


def run(req):
    try:
        done = subprocess.run(req["argv"], cwd=req["cwd"], env=req["env"], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=req.get("timeout", 300))
    except subprocess.TimeoutExpired:
        return {"returncode": None, "stderr": "timed out"}
    return {"returncode": done.returncode, "stdout": done.stdout.decode(errors="replace")[-2000:],
            "stderr": done.stderr.decode(errors="replace")[-2000:]}


OPS = {"ping": lambda req: {"pid": os.getpid()}, "spawn": spawn, "status": status, "kill": kill, "run": run}


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        try:
            req = json.loads(self.rfile.readline())
            answer = OPS[req["op"]](req)
        except Exception as exc:  # every failure goes back to the host, the supervisor stays up
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        self.wfile.write(json.dumps(answer).encode() + b"\n")


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def start_display(number, geometry, window_manager):
    xvfb = subprocess.Popen(["Xvfb", f":{number}", "-screen", "0", geometry, "-nolisten", "tcp",
                             "-noreset", "+extension", "XTEST"], start_new_session=True)
    DISPLAY["xvfb"] = xvfb
    path = f"/tmp/.X11-unix/X{number}"
    deadline = time.monotonic() + 20
    while True:   # bounded wait for the server's socket to accept connections
        if xvfb.poll() is not None:
            sys.exit(f"Xvfb exited with status {xvfb.returncode}")
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(path)
            break
        except OSError:
            if time.monotonic() > deadline:
                sys.exit(f"Xvfb :{number} did not listen within 20 s")
            time.sleep(0.02)
    env = dict(os.environ, DISPLAY=f":{number}")
    DISPLAY["wm"] = subprocess.Popen([window_manager], env=env, start_new_session=True)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--display", type=int, required=True)
    p.add_argument("--geometry", required=True, help="WIDTHxHEIGHTxDEPTH")
    p.add_argument("--socket", required=True, help="Unix socket path for the host's requests")
    p.add_argument("--window-manager", default="openbox")
    args = p.parse_args()
    start_display(args.display, args.geometry, args.window_manager)
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    server = Server(args.socket, Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        # It is stopped by SIGTERM, never by shutdown(), so it needs no wake-ups: a timer
        # due soon in the container's processes tells the settle rule the program may draw.
        server.serve_forever(poll_interval=3600)
    finally:
        kill({})
        for proc in DISPLAY.values():
            _killpg(proc)


if __name__ == "__main__":
    main()
