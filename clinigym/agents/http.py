"""A GUI-grounding model behind an OpenAI-compatible API (vLLM, SGLang, llama.cpp,
OpenAI), spoken to in its family's own prompt and output conventions.

The screenshot is resized on the client to the family's size (smart_resize for
the Qwen2.5-VL family) before it is sent, so that the server's own resizing
cannot shift the clicks; the answer is parsed into observation pixels. An
unparsable answer, a point outside the image, or a server that keeps failing
is no prediction (never a guess). The prompt, the raw text, the parsed points
and the latency go into `Action.meta`, which the environment records.
"""
from __future__ import annotations

import base64
import io
import json
import os
import time
from typing import Any

import numpy as np
import requests
from PIL import Image

from clinigym.agents.families import Family, get_family
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


class Client:
    """POSTs to an OpenAI-compatible server, retried with exponential back-off."""

    def __init__(self, base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY", timeout: float = 120.0,
                 retries: int = 3, backoff: float = 0.5):
        self.base_url, self.model = base_url.rstrip("/"), model
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self._session = requests.Session()
        self._session.trust_env = False   # talk to the given URL, not through a proxy
        key = os.environ.get(api_key_env)
        if key:
            self._session.headers["Authorization"] = f"Bearer {key}"

    def post(self, path: str, body: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
        """(the reply, or None when every attempt failed; the errors of the failed attempts)."""
        errors: list[str] = []
        for attempt in range(self.retries + 1):
            try:
                resp = self._session.post(f"{self.base_url}/{path}", json={"model": self.model, **body},
                                          timeout=self.timeout)
                if resp.status_code != 200:
                    raise ModelError(f"HTTP {resp.status_code}: {resp.text[:200]}")
                try:
                    reply = resp.json()
                except ValueError:
                    raise ModelError(f"malformed JSON: {resp.text[:200]!r}") from None
                if not isinstance(reply, dict):
                    raise ModelError(f"not a JSON object: {resp.text[:200]!r}")
                return reply, errors
            except (requests.RequestException, ModelError) as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:300])
                if attempt < self.retries:
                    time.sleep(self.backoff * 2 ** attempt)
        return None, errors


class HttpAgent:
    name = "http"

    def __init__(self, context: AgentContext | None = None, seed: int | None = None, *,
                 family: str | Family = "ui-tars-1.5",
                 base_url: str = "http://127.0.0.1:8000/v1", model: str = "default",
                 api_key_env: str = "OPENAI_API_KEY", timeout: float = 120.0, retries: int = 3,
                 backoff: float = 0.5, max_tokens: int = 512):
        self.family = family if isinstance(family, Family) else get_family(family)
        self.max_tokens = max_tokens
        self.client = Client(base_url, model, api_key_env, timeout, retries, backoff)

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
        return "chat/completions", {"messages": messages, "temperature": 0.0, "max_tokens": self.max_tokens,
                                    **extra}

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
        rgb = observation["screenshot"]
        size = (rgb.shape[1], rgb.shape[0])
        instruction = observation["instruction"]
        prompt = self.family.build_messages(instruction, size, data_url(rgb, self.family.resize_for(size)))
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
