"""Debian's Chromium as the window of a web program, and its DevTools endpoint on loopback."""
from __future__ import annotations

import json
import shutil
import threading
from itertools import count
from urllib.parse import urlsplit

import requests
import websocket

from clinigym.core.errors import ProgramError
from clinigym.core.geometry import Box

# Flags that keep Chromium off the network (only loopback is reachable here),
# free of first-run UI and infobars, and at a fixed geometry at (0, 0). A request for any
# other address (a link an agent follows) goes to a proxy on a closed loopback port and
# fails there, and no host name is looked up: nothing leaves the machine, and DevTools
# still reports the request (`RequestLog`), which the safety audit flags.
CHROMIUM_FLAGS = (
    "--no-sandbox", "--test-type", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-quic", "--disable-gpu", "--disable-features=Translate,MediaRouter",
    "--disable-session-crashed-bubble", "--password-store=basic", "--hide-crash-restore-bubble",
    "--force-device-scale-factor=1", "--kiosk",
    "--proxy-server=http://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
)
NETWORK_SCHEMES = ("http", "https", "ws", "wss", "ftp")


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host == "localhost" or host == "::1" or host.startswith("127.")


def chromium_binary() -> str:
    return shutil.which("chromium") or "/usr/bin/chromium"


def chromium_command(url: str, profile: str, width: int, height: int, cdp_port: int | None) -> list[str]:
    cmd = [chromium_binary(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
           "--window-position=0,0", f"--window-size={width},{height}", f"--app={url}"]
    if cdp_port:
        cmd += ["--remote-debugging-address=127.0.0.1", f"--remote-debugging-port={cdp_port}",
                "--remote-allow-origins=*"]
    return cmd


_BOX_JS = """(() => {
  const sel = %s, text = %s;
  const visible = e => { const r = e.getBoundingClientRect();
    const s = getComputedStyle(e);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'; };
  const els = Array.from(document.querySelectorAll(sel)).filter(visible)
    .filter(e => text === null || (e.innerText || e.value || '').trim().includes(text));
  if (!els.length) return null;
  const r = els[0].getBoundingClientRect(), d = window.devicePixelRatio;
  const ox = window.screenX + (window.outerWidth - window.innerWidth) / 2;
  const oy = window.screenY + (window.outerHeight - window.innerHeight);
  return [(ox + r.left) * d, (oy + r.top) * d, (ox + r.right) * d, (oy + r.bottom) * d];
})()"""


class DevToolsError(ProgramError):
    """The browser's DevTools endpoint did not answer, or a page script failed (a page still loading)."""


class DevTools:
    """A minimal DevTools-protocol client for a browser's pages: evaluate JS, read element
    boxes. Reads only: input always goes through X like for any desktop program.

    A program may open a second window (a viewer): Chromium lists the page shown last
    first, so `evaluate` runs there and `element_box` looks front to back."""

    def __init__(self, port: int):
        self.port = port
        self._ws: dict[str, websocket.WebSocket] = {}
        self._ids = count(1)
        self._http = requests.Session()
        self._http.trust_env = False   # loopback: never through a proxy

    def _pages(self) -> list[dict]:
        try:
            targets = self._http.get(f"http://127.0.0.1:{self.port}/json", timeout=2).json()
        except (requests.RequestException, ValueError) as exc:
            raise DevToolsError(f"DevTools on port {self.port}: {type(exc).__name__}: {exc}") from None
        pages = [t for t in targets if t.get("type") == "page"]
        for gone in set(self._ws) - {p["id"] for p in pages}:
            self._drop(gone)
        return pages

    def _drop(self, page_id: str) -> None:
        ws = self._ws.pop(page_id, None)
        if ws is not None:
            try:
                ws.close()
            except (websocket.WebSocketException, OSError):
                pass

    def _call(self, page: dict, method: str, params: dict) -> dict:
        msg_id = next(self._ids)
        try:
            ws = self._ws.get(page["id"])
            if ws is None:
                ws = self._ws[page["id"]] = websocket.create_connection(
                    page["webSocketDebuggerUrl"], timeout=5, suppress_origin=True)
            ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
            while True:
                reply = json.loads(ws.recv())
                if reply.get("id") == msg_id:
                    break
        except (websocket.WebSocketException, OSError) as exc:
            self._drop(page["id"])  # the page or browser went away; reconnect on the next call
            raise DevToolsError(f"DevTools {method}: {type(exc).__name__}: {exc}") from None
        if "error" in reply:
            raise DevToolsError(f"DevTools {method}: {reply['error']}")
        return reply["result"]

    def _evaluate(self, page: dict, expression: str):
        result = self._call(page, "Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise DevToolsError(f"JS error: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def call(self, method: str, params: dict | None = None, page: dict | None = None) -> dict:
        """One DevTools-protocol method on `page` (default: the front page); its result."""
        if page is None:
            pages = self._pages()
            if not pages:
                raise DevToolsError("DevTools: the browser shows no page")
            page = pages[0]
        return self._call(page, method, params or {})

    def evaluate(self, expression: str):
        """Evaluate in the front page."""
        pages = self._pages()
        if not pages:
            raise DevToolsError("DevTools: the browser shows no page")
        return self._evaluate(pages[0], expression)

    def element_box(self, selector: str, text: str | None = None) -> Box | None:
        """Screen box of the first visible element matching `selector` (and containing `text`),
        in the front-most page that has one."""
        for page in self._pages():
            value = self._evaluate(page, _BOX_JS % (json.dumps(selector), json.dumps(text)))
            if value:
                return Box(*value)
        return None

    def close(self) -> None:
        for page_id in list(self._ws):
            self._drop(page_id)
        self._http.close()


class RequestLog:
    """Every network request a browser's pages send (method, URL), from DevTools' Network
    events, for the safety audit (MedCUA logs requests the same way). One connection to
    the browser: every page is attached as it appears (flattened sessions), so a second
    window is seen too. Reads only."""

    def __init__(self, port: int):
        http = requests.Session()
        http.trust_env = False
        try:
            url = http.get(f"http://127.0.0.1:{port}/json/version", timeout=2).json()["webSocketDebuggerUrl"]
            self._ws = websocket.create_connection(url, timeout=5, suppress_origin=True)
        except (requests.RequestException, ValueError, KeyError, websocket.WebSocketException, OSError) as exc:
            raise DevToolsError(f"DevTools request log on port {port}: {type(exc).__name__}: {exc}") from None
        finally:
            http.close()
        self._ids = count(1)
        self._lock = threading.Lock()
        self._seen: list[dict[str, str]] = []
        self._ids_seen: set[tuple[str, str]] = set()   # a page attached twice reports twice
        self._stop = threading.Event()
        self._send("Target.setDiscoverTargets", {"discover": True})
        # A new page (a link that opens a tab) waits until its log is on: else its first
        # request, the one the audit is about, can go out before Network.enable arrives.
        self._send("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True})
        self._ws.settimeout(0.2)
        self._thread = threading.Thread(target=self._listen, name=f"requests-{port}", daemon=True)
        self._thread.start()

    def _send(self, method: str, params: dict, session: str | None = None) -> None:
        msg = {"id": next(self._ids), "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self._ws.send(json.dumps(msg))

    def _event(self, msg: dict) -> None:
        method, params = msg.get("method"), msg.get("params", {})
        if method == "Target.targetCreated" and params["targetInfo"].get("type") == "page" \
                and not params["targetInfo"].get("attached"):
            self._send("Target.attachToTarget", {"targetId": params["targetInfo"]["targetId"], "flatten": True})
        elif method == "Target.attachedToTarget":
            if params["targetInfo"].get("type") == "page":
                self._send("Network.enable", {}, params["sessionId"])
            if params.get("waitingForDebugger"):
                self._send("Runtime.runIfWaitingForDebugger", {}, params["sessionId"])
        elif method == "Network.requestWillBeSent":
            req = params["request"]
            key = (params.get("requestId", ""), req["url"])
            if urlsplit(req["url"]).scheme in NETWORK_SCHEMES and key not in self._ids_seen:
                self._ids_seen.add(key)
                with self._lock:
                    self._seen.append({"method": req["method"], "url": req["url"]})

    def _listen(self) -> None:
        while not self._stop.is_set():
            try:
                self._event(json.loads(self._ws.recv()))
            except websocket.WebSocketTimeoutException:
                continue
            except (websocket.WebSocketException, OSError, ValueError):
                return   # the browser went away: what was seen stays

    def take(self) -> list[dict[str, str]]:
        """The requests seen since the last take."""
        with self._lock:
            seen, self._seen = self._seen, []
        return seen

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        try:
            self._ws.close()
        except (websocket.WebSocketException, OSError):
            pass
