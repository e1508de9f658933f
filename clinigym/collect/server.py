"""The collection page's HTTP server: stdlib `ThreadingHTTPServer` on 127.0.0.1 only.

Every request (the page itself included) must carry the per-run random token, as the
`token` query parameter or the `X-Clinigym-Token` header; anything else is 403, as is a
Host header that is not the loopback address the server listens on. Malformed requests
are 400 with the reason, requests the state does not allow now (a step awaiting
acceptance, nothing to undo) 409.

API (JSON in and out):

    GET  /                         the page            GET /page.js       its script
    GET  /api/state                session state       GET /api/screen.jpg the live screen
    GET  /api/image/<n>/before.png (after.png)         a step's screenshots
    POST /api/action   {type, x, y, x2, y2, text, keys, dx, dy}     forward one action
    POST /api/check    {step, box, instruction}        quality flags, nothing saved
    POST /api/accept   {step, box, instruction, end_box?, force?}   save a step
    POST /api/undo     {}                              drop the last step (reset + replay)
    POST /api/end      {overview?, scenario_id?, goal?} scenario, oracle replay, derived checks, dataset
    POST /api/new      {overview?}                     a new task from the start state
    POST /api/correct  {t, box, wrong, note}           review mode: fix a step's box
"""
from __future__ import annotations

import hmac
import json
import re
import secrets
import sys
import threading
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from clinigym.collect.errors import ActionError, Conflict

STATIC = Path(__file__).resolve().parent
MAX_BODY = 1 << 20
_IMAGE = re.compile(r"^/api/image/(\d+)/(before|after)\.png$")


class Handler(BaseHTTPRequestHandler):
    server_version = "clinigym-collect"
    protocol_version = "HTTP/1.1"

    # -- plumbing -------------------------------------------------------------------------
    def log_message(self, fmt, *args):   # quiet: the terminal shows the URL and the results
        if self.server.app.verbose:
            super().log_message(fmt, *args)

    def _send(self, status: int, body: bytes, ctype: str, extra: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy",
                         "default-src 'self'; img-src 'self' blob: data:; style-src 'self' 'unsafe-inline'; "
                         "connect-src 'self'; script-src 'self'")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data) -> None:
        self._send(status, json.dumps(data, default=str).encode(), "application/json")

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": message, "status": status})

    def _authorised(self, query: dict) -> bool:
        app = self.server.app
        host = (self.headers.get("Host") or "").strip().lower()
        if host not in app.hosts:
            self._error(403, f"forbidden: Host {host!r} is not this loopback server")
            return False
        token = (query.get("token") or [None])[0] or self.headers.get("X-Clinigym-Token") or ""
        if not hmac.compare_digest(token.encode(), app.token.encode()):
            self._error(403, "forbidden: a valid token is required (the URL printed at start)")
            return False
        return True

    def _body(self) -> dict:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise ActionError("bad Content-Length") from None
        if length > MAX_BODY:
            raise ActionError(f"request body larger than {MAX_BODY} bytes")
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return {}
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ActionError(f"malformed JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ActionError("the request body must be a JSON object")
        return data

    def _dispatch(self, method: str) -> None:
        url = urlparse(self.path)
        query = parse_qs(url.query)
        if not self._authorised(query):
            return
        try:
            self._route(method, url.path, query)
        except ActionError as exc:
            self._error(400, str(exc))
        except Conflict as exc:
            self._error(409, str(exc))
        except KeyError as exc:
            self._error(404, str(exc.args[0]) if exc.args else "not found")
        except Exception as exc:  # noqa: BLE001 - report, keep serving
            traceback.print_exc(file=sys.stderr)
            self._error(500, f"{exc.__class__.__name__}: {exc}")

    def do_GET(self):
        self._dispatch("GET")

    def do_HEAD(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    # -- routes ---------------------------------------------------------------------------
    def _route(self, method: str, path: str, query: dict) -> None:
        mode = self.server.app.mode
        data = query if method == "GET" else self._body()
        route = ROUTES[mode].get((method, path))
        if route is not None:
            return route(self, data)
        m = _IMAGE.match(path) if method == "GET" else None
        if m:
            return _image(self, path, int(m.group(1)), m.group(2))
        if method == "GET":
            raise KeyError(f"no such page: {path}")
        raise KeyError(f"no such call{' in review mode' if mode == 'review' else ''}: {path}")


# A route answers a request: GET with its query, POST with its JSON body.
Route = Callable[[Handler, dict], None]


def _page(h: Handler, _: dict) -> None:
    page = (STATIC / "page.html").read_text().replace("__TOKEN__", json.dumps(h.server.app.token)[1:-1])
    h._send(200, page.encode(), "text/html; charset=utf-8")


def _script(h: Handler, _: dict) -> None:
    h._send(200, (STATIC / "page.js").read_bytes(), "text/javascript; charset=utf-8")


def _state(h: Handler, _: dict) -> None:
    h._json(200, h.server.app.session.state())


def _screen(h: Handler, _: dict) -> None:
    body, seq = h.server.app.session.view.jpeg()
    h._send(200, body, "image/jpeg", {"X-Frame-Seq": str(seq)})


def _no_screen(h: Handler, _: dict) -> None:
    raise KeyError("no live screen in review mode")


def _image(h: Handler, path: str, index: int, which: str) -> None:
    image = h.server.app.session.image(index, which)
    if not image.exists():
        raise KeyError(f"{path}: no such image")
    h._send(200, image.read_bytes(), "image/png")


def _action(h: Handler, body: dict) -> None:
    h._json(200, h.server.app.session.perform(body).to_json())


def _check(h: Handler, body: dict) -> None:
    try:
        flags = h.server.app.session.check(body.get("step"), body.get("box"), body.get("instruction"),
                                           body.get("end_box"))
    except ValueError as exc:
        raise ActionError(str(exc)) from None
    h._json(200, {"flags": flags})


def _accept(h: Handler, body: dict) -> None:
    h._json(200, h.server.app.session.accept(body.get("step"), body.get("box"), body.get("instruction"),
                                             body.get("end_box"), bool(body.get("force"))))


def _undo(h: Handler, _: dict) -> None:
    h._json(200, h.server.app.session.undo())


def _end(h: Handler, body: dict) -> None:
    app = h.server.app
    given = {k: body.get(k) for k in ("overview", "scenario_id", "goal")}
    if any(v is not None and not isinstance(v, str) for v in given.values()):
        raise ActionError("overview, scenario_id and goal are strings")
    result = app.session.end(**given)
    if app.on_result:
        app.on_result(result)
    h._json(200, result)


def _new(h: Handler, body: dict) -> None:
    h._json(200, h.server.app.session.new_task(body.get("overview")))


def _correct(h: Handler, body: dict) -> None:
    h._json(200, h.server.app.session.correct(body.get("t"), body.get("box"), bool(body.get("wrong", True)),
                                              str(body.get("note") or "")))


_PAGES: dict[tuple[str, str], Route] = {
    ("GET", "/"): _page, ("GET", "/index.html"): _page, ("GET", "/page.js"): _script, ("GET", "/api/state"): _state}
# Per server mode (`CollectServer.mode`): (method, path) -> route; a step's images are the
# one pattern (`_IMAGE`), served in both.
ROUTES: dict[str, dict[tuple[str, str], Route]] = {
    "collect": _PAGES | {
        ("GET", "/api/screen.jpg"): _screen, ("POST", "/api/action"): _action, ("POST", "/api/check"): _check,
        ("POST", "/api/accept"): _accept, ("POST", "/api/undo"): _undo, ("POST", "/api/end"): _end,
        ("POST", "/api/new"): _new},
    "review": _PAGES | {("GET", "/api/screen.jpg"): _no_screen, ("POST", "/api/correct"): _correct},
}


class CollectServer:
    """Serves a `CollectSession` (collect mode) or a `ReviewSession` (review mode)."""

    def __init__(self, session, port: int = 0, token: str | None = None, verbose: bool = False,
                 on_result=None):
        self.session = session
        self.mode = "review" if session.__class__.__name__ == "ReviewSession" else "collect"
        self.token = token or secrets.token_urlsafe(18)
        self.verbose = verbose
        self.on_result = on_result
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.app = self
        self.port = self.httpd.server_address[1]
        self.hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def start(self) -> CollectServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="collect-http", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread:
            self._thread.join(5)
