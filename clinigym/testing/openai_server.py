"""Small OpenAI-compatible servers on loopback, so that every model adapter is tested end
to end over real HTTP (on the real programs too) without model weights.

- `LoopbackServer`: the HTTP side shared by both: POSTs on 127.0.0.1, every request body
  and its headers kept, GET /models listing its model names (as a preflight asks), and
  failures on demand, consumed one per request (HTTP 500, a timeout, malformed
  JSON, an empty answer).
- `TestServer(family)`: answers like a grounding model family, grounding with a local
  grounder (the OCR agent by default).
- `clinigym.testing.cua_server.CuaServer(format, policy)`: answers like a computer-use
  model, its actions chosen by a policy.

    with TestServer("ui-tars-1.5") as server:
        agent = HttpAgent(family="ui-tars-1.5", base_url=server.url)

As a process, a stand-in for `vllm serve` (a family's answers, grounded by OCR), until
SIGINT or SIGTERM; it prints `serving FAMILY on URL` once it listens:

    python -m clinigym.testing.openai_server --family ui-tars-1.5 [--port 8000] [--model NAME]
"""
from __future__ import annotations

import argparse
import base64
import io
import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
from PIL import Image

from clinigym.agents.families import Family, get_family
from clinigym.core.errors import ClinigymError

Grounder = Callable[[np.ndarray, str], "tuple[float, float] | None"]
FAILURES = ("500", "timeout", "malformed", "empty")
_MARK = "\u0000INSTRUCTION\u0000"


def ocr_grounder() -> Grounder:
    from clinigym.agents.ocr import OcrAgent
    agent = OcrAgent()

    def ground(rgb: np.ndarray, instruction: str):
        return agent.act({"screenshot": rgb, "instruction": instruction, "step": 0}, {}).point
    return ground


def _texts(messages: list[dict]) -> str:
    """The prompt's text (an assistant prefill is the answer's start, not the prompt)."""
    parts = []
    for m in messages:
        if m.get("role") == "assistant":
            continue
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [p.get("text", "") for p in content if p.get("type") in ("text", "input_text")]
    return "\n".join(parts)


def last_image(body: Any) -> np.ndarray | None:
    """The last screenshot of a request (a data URL anywhere in it: the current one)."""
    urls: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and value.startswith("data:image/"):
            urls.append(value)
    walk(body)
    if not urls:
        return None
    raw = base64.b64decode(urls[-1].split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(raw)).convert("RGB"))


def instruction_of(family: Family, messages: list[dict], size: tuple[int, int], api: str) -> str:
    """The step instruction inside the family's prompt: render the same prompt around
    a marker and strip the text before and after it."""
    probe = family.prompt(_MARK, size, "data:image/png;base64,")
    template = _texts(probe.messages)
    before, after = template.split(_MARK, 1)
    text = _texts(messages)
    start = text.find(before) + len(before) if before in text else 0
    end = text.rfind(after) if after and after in text[start:] else len(text)
    return text[start:end].strip()


def chat_reply(text: str, model: str | None) -> dict[str, Any]:
    return {"id": "chatcmpl-test", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": len(text.split())}}


def responses_reply(output: list[dict[str, Any]], response_id: str = "resp-test") -> dict[str, Any]:
    return {"id": response_id, "object": "response", "output": output}


class BadRequest(ClinigymError, ValueError):
    """A request the server answers with HTTP 400 (a test's mistake, shown to the client)."""


class LoopbackServer:
    """Answers POSTs under /v1 with `reply(api, body)` ("chat.completions" or "responses"),
    after the failures asked for; an "empty" failure answers `empty(api, body)`."""
    __test__ = False   # not a pytest class

    def __init__(self, failures: list[str] = (), hang: float = 5.0, port: int = 0,
                 models: tuple[str, ...] = ("default",)):
        self.models = tuple(models)        # what GET /models lists ("default": the agents' default --model)
        self.failures = list(failures)   # consumed one per request, then normal answers
        for f in self.failures:
            if f not in FAILURES:
                raise ValueError(f"unknown failure {f!r}; known: {', '.join(FAILURES)}")
        self.hang = hang
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []    # each request's headers, in the order of `requests`
        self._lock = threading.RLock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())   # port 0: a free one
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def reply(self, api: str, body: dict) -> dict[str, Any]:
        raise NotImplementedError

    def empty(self, api: str, body: dict) -> dict[str, Any]:
        raise NotImplementedError

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):   # keep test output clean
                pass

            def _send(self, status: int, payload: bytes, kind="application/json"):
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self):
                if not self.path.rstrip("/").endswith("/models"):
                    return self._send(404, b'{"error": {"message": "not found"}}')
                listed = [{"id": m, "object": "model", "owned_by": "clinigym-test"} for m in server.models]
                self._send(200, json.dumps({"object": "list", "data": listed}).encode())

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with server._lock:   # a body and its headers at the same index
                    server.requests.append(body)
                    server.headers.append(dict(self.headers.items()))
                failure = server.failures.pop(0) if server.failures else None
                if failure == "500":
                    return self._send(500, b'{"error": {"message": "injected failure"}}')
                if failure == "timeout":
                    time.sleep(server.hang)
                if failure == "malformed":
                    return self._send(200, b"{not json")
                api = "responses" if self.path.endswith("/responses") else "chat.completions"
                try:
                    reply = server.empty(api, body) if failure == "empty" else server.reply(api, body)
                except BadRequest as exc:
                    return self._send(400, json.dumps({"error": {"message": str(exc)}}).encode())
                self._send(200, json.dumps(reply).encode())

        return Handler

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class TestServer(LoopbackServer):
    def __init__(self, family: str | Family, grounder: Grounder | None = None,
                 failures: list[str] = (), hang: float = 5.0, port: int = 0,
                 models: tuple[str, ...] = ("default",)):
        self.family = family if isinstance(family, Family) else get_family(family)
        self._grounder = grounder
        super().__init__(failures, hang, port, models)

    def grounder(self) -> Grounder:
        with self._lock:
            if self._grounder is None:
                self._grounder = ocr_grounder()
            return self._grounder

    def answer(self, body: dict, api: str) -> str:
        """The family's native answer text for one request."""
        messages = body["messages"] if api == "chat.completions" else body["input"]
        rgb = last_image(messages)
        if rgb is None:
            raise BadRequest("no image in the request")
        size = (rgb.shape[1], rgb.shape[0])
        instruction = instruction_of(self.family, messages, size, api)
        with self._lock:   # one grounding at a time: OCR is not re-entrant
            point = self.grounder()(rgb, instruction)
        # The image arrived at the family's sent size, which is its own resize target.
        return self.family.format_answer([point], size) if point else "I cannot find that element."

    def _wrap(self, api: str, body: dict, text: str) -> dict[str, Any]:
        if api == "responses":
            return responses_reply([json.loads(text)] if text.startswith("{") else
                                   [{"type": "message", "content": [{"type": "output_text", "text": text}]}])
        return chat_reply(text, body.get("model"))

    def reply(self, api: str, body: dict) -> dict[str, Any]:
        return self._wrap(api, body, self.answer(body, api))

    def empty(self, api: str, body: dict) -> dict[str, Any]:
        return self._wrap(api, body, "")


def main(argv: list[str] | None = None) -> int:
    from clinigym.agents.families import FAMILIES
    parser = argparse.ArgumentParser(prog="python -m clinigym.testing.openai_server",
                                     description="An OpenAI-compatible server on 127.0.0.1 that answers like a "
                                                 "GUI-grounding model family, grounding with OCR (no weights).")
    parser.add_argument("--family", default="ui-tars-1.5", choices=list(FAMILIES), help="default: ui-tars-1.5")
    parser.add_argument("--port", type=int, default=0, help="default: a free one (the printed URL says which)")
    parser.add_argument("--model", action="append", help="a model name GET /models lists (repeatable; "
                                                         "default: default, the agents' default --model)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with TestServer(args.family, port=args.port, models=tuple(args.model or ("default",))) as server:
        print(f"serving {server.family.name} on {server.url}", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
