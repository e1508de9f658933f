#!/usr/bin/env python3
"""OHIF Viewer's static files plus a same-origin reverse proxy to Orthanc, on loopback.

Standard library only, Python 3.9+: it runs as `python3 serve.py ...` on the
host and inside a Debian container where clinigym is not installed.

- `/app-config.js`: rendered once at start from `--config-template` into
  `--config` (`{{PROXY_PATH}}` becomes the proxied path, `{{NAME}}` a
  `--var NAME=VALUE`), then served from there.
- `--proxy` paths (`/dicom-web/`, `/wado`) are forwarded to `--upstream`
  (Orthanc) with the original Host header, so the DICOMweb plugin writes
  URLs that point back at this server (same origin, no CORS). A QIDO
  `includefield=a,b` becomes `includefield=a&includefield=b`, which
  Orthanc's DICOMweb plugin 1.7 (Debian 12) understands.
- Anything else is a file of `--root` (OHIF's `dist/`); a path that is no
  file and no asset (an app route such as `/viewer`) gets `index.html`
  (single-page-app fallback). Every `--head` file is inlined into
  `index.html`'s head: a `.css` as a style sheet, a `.js` as a script.
"""
from __future__ import annotations

import argparse
import http.client
import mimetypes
import os
import posixpath
import re
import sys
import tempfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

# Extensions of assets: a missing one is a 404, never the app's index.html.
ASSET_EXT = {".js", ".mjs", ".css", ".map", ".wasm", ".json", ".jsonc", ".png", ".jpg", ".svg",
             ".ico", ".gif", ".webp", ".woff", ".woff2", ".ttf", ".eot", ".txt", ".xml",
             ".webapp", ".onnx"}
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailers", "transfer-encoding", "upgrade", "content-length"}
mimetypes.add_type("application/wasm", ".wasm")
mimetypes.add_type("text/javascript", ".js")
mimetypes.add_type("text/javascript", ".mjs")


def render_config(template: Path, out: Path, variables: dict) -> None:
    text = template.read_text(encoding="utf-8")
    missing = set()

    def sub(m):
        if m.group(1) not in variables:
            missing.add(m.group(1))
            return m.group(0)
        return variables[m.group(1)]
    text = re.sub(r"\{\{([A-Z0-9_]+)\}\}", sub, text)
    if missing:
        raise SystemExit(f"serve.py: {template}: no value for {', '.join(sorted(missing))}")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=".app-config.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, out)


def upstream_path(path: str) -> str:
    """The request path for Orthanc: comma-separated `includefield` values split into
    one parameter each (DICOMweb allows both; the plugin 1.7 reads only the second).
    Every other parameter is passed on byte for byte (wildcards stay as sent)."""
    parts = urlsplit(path)
    if "includefield" not in parts.query.lower():
        return path
    query = []
    for item in parts.query.split("&"):
        key, eq, value = item.partition("=")
        if key.lower() == "includefield" and eq:
            query += [f"{key}={quote(v, safe='')}" for v in unquote(value).split(",") if v]
        else:
            query.append(item)
    return urlunsplit(("", "", parts.path, "&".join(query), ""))


def inline_head(index: bytes, files: list) -> bytes:
    """index.html with each file inlined before </head>: .css as <style>, .js as <script>."""
    tags = b""
    for name in files:
        data = Path(name).read_bytes()
        if name.endswith(".css"):
            tags += b"<style>" + data + b"</style>"
        elif name.endswith(".js"):
            tags += b"<script>" + data + b"</script>"
        else:
            raise SystemExit(f"serve.py: --head {name}: only .css and .js files")
    return index.replace(b"</head>", tags + b"</head>", 1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "clinigym-ohif"
    # Set on the class by main().
    root: Path
    config: Path
    index_html: bytes
    upstream: tuple
    proxy: tuple

    def log_message(self, fmt, *args):  # errors only: a log line per image would be noise
        pass

    def log_error(self, fmt, *args):
        sys.stderr.write("serve.py: " + (fmt % args) + "\n")

    # -- dispatch -------------------------------------------------------------------
    def _proxied(self) -> bool:
        path = urlsplit(self.path).path
        return any(path == p.rstrip("/") or path.startswith(p) for p in self.proxy)

    def do_GET(self):
        self._forward() if self._proxied() else self._static(head=False)

    def do_HEAD(self):
        self._forward() if self._proxied() else self._static(head=True)

    def do_POST(self):
        self._forward() if self._proxied() else self._send(405, b"method not allowed\n", "text/plain")

    do_PUT = do_DELETE = do_POST

    def do_OPTIONS(self):
        self._forward() if self._proxied() else self._send(204, b"", "text/plain")

    # -- responses --------------------------------------------------------------------
    def _send(self, status: int, body: bytes, ctype: str, head: bool = False, extra=()) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache")
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _static(self, head: bool) -> None:
        path = posixpath.normpath(unquote(urlsplit(self.path).path))
        if path == "/app-config.js":
            return self._send(200, self.config.read_bytes(), "text/javascript; charset=utf-8", head)
        if path in ("/", "/index.html"):
            return self._send(200, self.index_html, "text/html; charset=utf-8", head)
        rel = path.lstrip("/")
        file = (self.root / rel).resolve()
        inside = file == self.root or self.root in file.parents
        if inside and file.is_file():
            ctype = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
            if ctype.startswith("text/") or ctype.endswith(("javascript", "json")):
                ctype += "; charset=utf-8"
            return self._send(200, file.read_bytes(), ctype, head)
        if not inside or posixpath.splitext(path)[1].lower() in ASSET_EXT:
            return self._send(404, b"not found\n", "text/plain", head)
        return self._send(200, self.index_html, "text/html; charset=utf-8", head)  # SPA route

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            conn.request(self.command, upstream_path(self.path), body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        except OSError as exc:
            return self._send(502, f"upstream: {exc}\n".encode(), "text/plain")
        finally:
            conn.close()
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in HOP_BY_HOP:
                self.send_header(k, v)
        head = self.command == "HEAD"
        self.send_header("Content-Length", resp.getheader("Content-Length", "0") if head else str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--bind", default="127.0.0.1", help="loopback only (default 127.0.0.1)")
    p.add_argument("--root", required=True, help="OHIF's built dist/ folder")
    p.add_argument("--config-template", required=True, help="app-config.js with {{NAME}} fields")
    p.add_argument("--config", required=True, help="where the rendered app-config.js is written")
    p.add_argument("--upstream", required=True, help="Orthanc, e.g. http://127.0.0.1:8042")
    p.add_argument("--proxy", action="append", default=[],
                   help="path prefix forwarded upstream (repeatable; default /dicom-web/ and /wado)")
    p.add_argument("--head", action="append", default=[],
                   help=".css or .js file inlined into index.html's head (repeatable)")
    p.add_argument("--var", action="append", default=[], help="NAME=VALUE for the config template")
    args = p.parse_args(argv)
    if args.bind not in ("127.0.0.1", "localhost", "::1"):
        p.error("--bind must be a loopback address")
    root = Path(args.root).resolve()
    if not (root / "index.html").is_file():
        p.error(f"--root {root} has no index.html")
    up = urlsplit(args.upstream)
    if up.scheme != "http" or not up.hostname:
        p.error("--upstream must be http://HOST:PORT")
    proxy = tuple(args.proxy or ["/dicom-web/", "/wado"])
    variables = dict(v.split("=", 1) for v in args.var)
    variables.setdefault("PROXY_PATH", proxy[0].rstrip("/"))
    render_config(Path(args.config_template), Path(args.config), variables)
    index = inline_head((root / "index.html").read_bytes(), args.head)

    Handler.root, Handler.config, Handler.index_html = root, Path(args.config).resolve(), index
    Handler.upstream, Handler.proxy = (up.hostname, up.port or 80), proxy
    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer((args.bind, args.port), Handler)
    print(f"serve.py: http://{args.bind}:{args.port}/ -> {root}; {', '.join(proxy)} -> "
          f"{args.upstream}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
