"""A GUI-grounding model behind an OpenAI-compatible API (vLLM, SGLang, llama.cpp,
OpenAI), spoken to in its family's own prompt and output conventions.

The screenshot is resized on the client to the family's size (smart_resize for
the Qwen2.5-VL family) before it is sent, so that the server's own resizing
cannot shift the clicks; the answer is parsed into observation pixels. An
unparsable answer, a point outside the image, or a request the server refuses (HTTP 4xx)
is no prediction (never a guess). A server that gives no usable reply after every retry
(no connection, a timeout, HTTP 5xx, a body that is not JSON) raises `ServerUnavailable`:
the model was not asked, so it is an infrastructure fault, not the model's failure
(`clinigym.run.episodes` records the episode as one). The prompt, the raw text, the
parsed points and the latency go into `Action.meta`, which the environment records.

What the request shows besides the instruction follows the observation mode
(`clinigym.agents.families.observed`): the tree text or the mark list after the family's
prompt, no image in the a11y mode; in the som mode the model may name a mark instead of
giving coordinates (the family's `mark_hint`), and the point is its box centre, the
marks used in `meta["marks"]`; a number the screen has no mark for is no prediction, the
reason in `meta["problem"]`.

`preflight` asks a server before a run whether it answers and serves the model
(GET {base_url}/models, as OpenAI-compatible servers list theirs).

Chat-completions requests carry the sampling options (temperature, default 0.0: greedy
and repeatable; max_tokens); a Responses API request (the openai-computer-use family)
carries neither, as its computer-use models refuse a temperature. The API key and the
extra request fields: `clinigym.agents.request`.
"""
from __future__ import annotations

import base64
import io
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import requests
from PIL import Image

from clinigym.agents import request
from clinigym.agents.families import Family, get_family
from clinigym.agents.families.observed import MAX_A11Y_CHARS, Observed, mark_centre
from clinigym.agents.intent import action_type, typed_text
from clinigym.core.actions import Action
from clinigym.core.context import AgentContext
from clinigym.core.errors import AgentError


def data_url(rgb: np.ndarray, size: tuple[int, int]) -> str:
    img = Image.fromarray(rgb)
    if img.size != size:
        img = img.resize(size, Image.BICUBIC)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


class ModelError(AgentError):
    pass


class ServerUnavailable(ModelError):
    """The model server at `base_url` gave no usable reply (after every retry)."""

    def __init__(self, base_url: str, model: str, problem: str):
        self.base_url, self.model, self.problem = base_url, model, problem
        super().__init__(f"the model server at {base_url} (model {model}) is unavailable: {problem}")


class ModelNotServed(ModelError):
    """The server answers but does not list the model."""

    def __init__(self, base_url: str, model: str, served: list[str]):
        self.base_url, self.model, self.served = base_url, model, served
        super().__init__(f"the model server at {base_url} does not serve the model {model!r} "
                         f"(it serves: {', '.join(served)}); give one of them with --model")


class _Unavailable(ModelError):
    """An attempt without a usable reply (see the module's docstring), as opposed to a refusal."""


class Client:
    """POSTs to an OpenAI-compatible server, retried with exponential back-off. Every body
    gets the model and the extra fields (`request.extra_body`); the API key comes from an
    environment variable (`request.api_key`) and goes only into the Authorization header."""

    def __init__(self, base_url: str, model: str, api_key_env: str | None = None, timeout: float = 120.0,
                 retries: int = 3, backoff: float = 0.5, extra_body: Mapping[str, Any] | str | None = None):
        self.base_url, self.model = base_url.rstrip("/"), model
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.extra_body = request.extra_body(extra_body)
        self._session = requests.Session()
        self._session.trust_env = False   # talk to the given URL, not through a proxy
        key = request.api_key(api_key_env)
        if key:
            self._session.headers["Authorization"] = f"Bearer {key}"

    def post(self, path: str, body: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
        """(the reply, or None when the server refused every attempt; the errors of the failed
        attempts). ServerUnavailable when the last attempt got no usable reply."""
        return self._call("POST", path, {"model": self.model, **body, **self.extra_body}, self.retries)

    def models(self, timeout: float, retries: int) -> tuple[int, Any]:
        """GET /models: (the HTTP status, its JSON body or None). ServerUnavailable when no
        attempt got an HTTP answer."""
        for attempt in range(retries + 1):
            try:
                resp = self._session.get(f"{self.base_url}/models", timeout=timeout)
                break
            except requests.RequestException as exc:
                if attempt == retries:
                    raise ServerUnavailable(self.base_url, self.model,
                                            f"no answer to GET /models: {type(exc).__name__}: {exc}"[:400]) from None
                time.sleep(self.backoff * 2 ** attempt)
        try:
            return resp.status_code, resp.json()
        except ValueError:
            return resp.status_code, None

    def _call(self, method: str, path: str, body: dict[str, Any],
              retries: int) -> tuple[dict[str, Any] | None, list[str]]:
        errors: list[str] = []
        unavailable = False
        for attempt in range(retries + 1):
            try:
                resp = self._session.request(method, f"{self.base_url}/{path}", timeout=self.timeout, json=body)
                if resp.status_code != 200:
                    error = _Unavailable if resp.status_code >= 500 else ModelError
                    raise error(f"HTTP {resp.status_code}: {resp.text[:200]}")
                try:
                    reply = resp.json()
                except ValueError:
                    raise _Unavailable(f"malformed JSON: {resp.text[:200]!r}") from None
                if not isinstance(reply, dict):
                    raise ModelError(f"not a JSON object: {resp.text[:200]!r}")
                return reply, errors
            except (requests.RequestException, ModelError) as exc:
                unavailable = isinstance(exc, (requests.RequestException, _Unavailable))
                name = "ModelError" if isinstance(exc, _Unavailable) else type(exc).__name__
                errors.append(f"{name}: {exc}"[:300])
                if attempt < retries:
                    time.sleep(self.backoff * 2 ** attempt)
        if unavailable:
            raise ServerUnavailable(self.base_url, self.model,
                                    f"{len(errors)} attempts failed, the last with {errors[-1]}")
        return None, errors


@dataclass(frozen=True)
class Served:
    """What a server said about its models before a run."""
    models: tuple[str, ...]              # the ids it lists
    entry: dict[str, Any] | None = None  # the model's own entry, its plain fields (vLLM: `root`, its weights)
    warning: str | None = None           # why the model could not be confirmed (the run goes on)


def read_models(base_url: str, model: str, status: int, payload: Any) -> Served:
    """A /models answer judged: the model listed (Served); the endpoint missing (HTTP 404,
    405) or an empty list: the address answers but the model cannot be confirmed (a
    warning; some proxies list nothing); another status or not a model list:
    ServerUnavailable; a list without the model: ModelNotServed."""
    if status in (404, 405):
        return Served((), None, f"the model server at {base_url} has no /models endpoint (HTTP {status}): "
                                f"cannot check that it serves {model!r}")
    if status != 200:
        hint = " (is the API key right? --api-key-env names its variable)" if status in (401, 403) else ""
        raise ServerUnavailable(base_url, model, f"GET /models: HTTP {status}{hint}")
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise ServerUnavailable(base_url, model, "GET /models: not a model list ({\"data\": [{\"id\": ...}]})")
    listed = {str(m["id"]): m for m in data if isinstance(m, dict) and m.get("id") is not None}
    if not listed:
        return Served((), None, f"the model server at {base_url} lists no models: cannot check that it "
                                f"serves {model!r}")
    if model not in listed:
        raise ModelNotServed(base_url, model, list(listed))
    entry = {k: v for k, v in listed[model].items() if isinstance(v, (str, int, float, bool))}
    return Served(tuple(listed), entry)


def preflight(base_url: str, model: str, api_key_env: str | None = None, timeout: float = 10.0,
              retries: int = 2) -> Served:
    """Before a run: the server at `base_url` answers and serves `model` (`read_models`).
    A dead address raises ServerUnavailable after `retries` retries."""
    status, payload = Client(base_url, model, api_key_env, backoff=0.5).models(timeout, retries)
    return read_models(base_url.rstrip("/"), model, status, payload)


class HttpAgent:
    name = "http"

    def __init__(self, context: AgentContext | None = None, seed: int | None = None, *,
                 family: str | Family = "ui-tars-1.5",
                 base_url: str = "http://127.0.0.1:8000/v1", model: str = "default",
                 api_key_env: str | None = None, timeout: float = 120.0, retries: int = 3,
                 backoff: float = 0.5, max_tokens: int = 512, temperature: float = 0.0,
                 extra_body: Mapping[str, Any] | str | None = None, a11y_chars: int = MAX_A11Y_CHARS):
        self.family = family if isinstance(family, Family) else get_family(family)
        self.size = context.observation_size if context is not None else None
        self.a11y_chars = a11y_chars    # the most characters of tree text or mark list a request carries
        self.max_tokens, self.temperature = request.max_tokens(max_tokens), request.temperature(temperature)
        self.client = Client(base_url, model, api_key_env, timeout, retries, backoff, extra_body)

    def reset(self, seed: int | None = None) -> None:
        pass

    def _request(self, prompt) -> tuple[str, dict]:
        """(the request's path, its body without the model: the client adds it)."""
        if prompt.api == "responses":
            return "responses", {"input": responses_input(prompt.messages), "tools": prompt.tools or [],
                                 **prompt.extra}
        messages = list(prompt.messages)
        extra = dict(prompt.extra)
        if prompt.prefill:
            # vLLM continues a final assistant message instead of starting a new turn.
            messages.append({"role": "assistant", "content": prompt.prefill})
            extra.update(continue_final_message=True, add_generation_prompt=False)
        return "chat/completions", {"messages": messages, "temperature": self.temperature,
                                    "max_tokens": self.max_tokens, **extra}

    @staticmethod
    def _text(reply: dict, api: str) -> str:
        try:
            if api == "responses":
                calls = [item for item in reply["output"] if item.get("type") == "computer_call"]
                return json.dumps(calls[0]) if calls else ""
            return reply["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise ModelError(f"unexpected reply shape: {json.dumps(reply)[:200]}") from None

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Action:
        seen = Observed.of(observation, self.size)
        size, instruction = seen.size, observation["instruction"]
        url = None if seen.image is None else data_url(seen.image, self.family.resize_for(size))
        prompt = self.family.build_messages(instruction, size, url, seen.text(self.family.mark_hint, self.a11y_chars))
        meta: dict[str, Any] = {"family": self.family.name, "model": self.client.model,
                                "prompt": _without_images(prompt.messages), "sent_size": list(prompt.image_size)}
        t0 = time.monotonic()
        reply, errors = self.client.post(*self._request(prompt))
        text = None
        if reply is not None:
            try:
                text, meta["usage"] = self._text(reply, prompt.api), reply.get("usage") or {}
            except ModelError as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:300])
        meta.update(latency=time.monotonic() - t0, raw=text, errors=errors)
        marks, problems = self.family.named_marks(text, seen.marks) if text and seen.marks else ([], [])
        if marks or problems:   # a mark named: its centre, never coordinates the answer also holds
            points = [mark_centre(m) for m in marks]
            meta["marks"] = [m.as_dict() for m in marks]
            if problems:
                meta["problem"] = "; ".join(problems)
        else:
            points = self.family.parse(text, size) if text else []
        meta["points"] = [list(p) for p in points]
        return Action(action_type(instruction), points[0] if points else None,
                      text=typed_text(instruction), meta=meta)


def responses_input(messages: list[dict]) -> list[dict]:
    """Chat messages in the Responses API's shape (input_text / input_image parts)."""
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, list):
            content = [{"type": "input_image", "image_url": p["image_url"]["url"]} if p["type"] == "image_url"
                       else {"type": "input_text", "text": p["text"]} for p in content]
        out.append({"role": m["role"], "content": content})
    return out


def _without_images(messages: list[dict]) -> list[dict]:
    """The prompt as recorded: image parts replaced by a marker (they are in the PNGs)."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = [{"type": p["type"], "image_url": "<screenshot>"}
                       if p.get("type") in ("image_url", "input_image") else p for p in content]
        out.append({**m, "content": content})
    return out
