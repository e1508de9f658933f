"""The computer-use loop: each turn, the screenshot (resized to the format's size) goes to
the model with the conversation so far; its answer is read in the format's own
vocabulary and each call becomes one environment action, returned one per `act()` in
order (the calls after the first wait in a queue; the model is asked again once the
queue is empty).

What the environment cannot execute is never guessed into something else: an answer
without any readable action, a call without an equivalent (a triple click, a middle
click), or a request the server refuses (HTTP 4xx) becomes the dict form with the model's own
action name as its type (None when there is none), which the environment reports in
`info["invalid_action"]`. Every returned action carries in its meta the request as sent
(screenshots replaced by a marker), the raw answer, the calls and their parsed actions,
the latency and the errors. A server that gives no usable reply after every retry raises
`clinigym.agents.http.ServerUnavailable` (an infrastructure fault, not the model's turn).

The observation mode decides what else a turn shows (`clinigym.agents.families.observed`):
the tree text or the mark list after the current screenshot, no screenshot in the a11y
mode (the Responses format, whose call outputs are screenshots, is refused there). In
the som mode a call may name a mark (the format's `mark_hint`); the action's meta lists
the marks used (`marks`), and a number the screen has no mark for refuses the call.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from clinigym.agents import request
from clinigym.agents.cua.base import Dialogue, ReplyError, Settings, Step, last_pointer, no_action, redact
from clinigym.agents.cua.formats import Format, get_format
from clinigym.agents.families.coords import Point
from clinigym.agents.families.observed import MAX_A11Y_CHARS, SCREENSHOT, Observed
from clinigym.agents.http import Client, data_url
from clinigym.core.actions import ACTION_TYPES, Action
from clinigym.core.context import AgentContext
from clinigym.core.errors import AgentError


class CuaAgent:
    name = "cua"

    def __init__(self, context: AgentContext | None = None, seed: int | None = None, *,
                 format: str | Format = "qwen3-vl", base_url: str = "http://127.0.0.1:8000/v1",
                 model: str = "default", api_key_env: str | None = None, timeout: float = 120.0,
                 retries: int = 3, backoff: float = 0.5, images: int = 3, max_tokens: int = 1024,
                 temperature: float = 0.0, extra_body: Mapping[str, Any] | str | None = None,
                 a11y_chars: int = MAX_A11Y_CHARS):
        self.format = get_format(format) if isinstance(format, str) else format
        actions = context.actions if context is not None else ACTION_TYPES
        self.size = context.observation_size if context is not None else None
        self.a11y_chars = a11y_chars    # the most characters of tree text or mark list a request carries
        if context is not None and context.observation not in SCREENSHOT:
            if self.format.api == "responses":
                raise AgentError(f"the {self.format.name} format answers every call with a screenshot: run it "
                                 f"with an observation mode that gives one ({', '.join(SCREENSHOT)})")
            images = 1   # no screenshots: the window is the current turn, every past turn is text
        settings = Settings(images, request.max_tokens(max_tokens), request.temperature(temperature), tuple(actions))
        self.dialogue: Dialogue = self.format.dialogue(settings)
        self.client = Client(base_url, model, api_key_env, timeout, retries, backoff, extra_body)
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.dialogue.reset()
        self.queue: list[Step] = []
        self.cursor: Point | None = None     # where the pointer is after the actions handed out
        self.turn = 0

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Action | dict[str, Any]:
        seen = Observed.of(observation, self.size)
        sizes = self.format.sizes(seen.size)
        url = None if seen.image is None else data_url(seen.image, sizes.sent)
        self.dialogue.observed(url)
        if self.queue:
            return self._hand(self.queue.pop(0), {"format": self.format.name, "turn": self.turn - 1,
                                                  "queued": True})
        body = self.dialogue.request(observation["instruction"], url, sizes,
                                     seen.text(self.format.mark_hint, self.a11y_chars))
        meta: dict[str, Any] = {"format": self.format.name, "model": self.client.model, "turn": self.turn,
                                "prompt": redact(body), "sent_size": list(sizes.sent)}
        self.turn += 1
        t0 = time.monotonic()
        reply, errors = self.client.post(self.dialogue.path, body)
        meta.update(latency=time.monotonic() - t0, errors=errors)
        if reply is None:
            return no_action(None, {**meta, "problem": "the server refused the request"})
        try:
            reading = self.dialogue.read(reply, url, sizes, self.cursor, seen.marks)
        except ReplyError as exc:
            return no_action(None, {**meta, "problem": str(exc)})
        meta.update(reading.extra, raw=reading.text, usage=reply.get("usage") or {},
                    calls=[s.native for s in reading.steps],
                    parsed=[s.action.to_json() if s.action else None for s in reading.steps])
        if not reading.steps:
            return no_action(None, {**meta, "problem": "no action in the answer"})
        self.cursor = last_pointer(reading.steps, self.cursor)
        self.queue = reading.steps[1:]
        return self._hand(reading.steps[0], meta)

    def _hand(self, step: Step, meta: dict[str, Any]) -> Action | dict[str, Any]:
        self.dialogue.handed(step)
        meta = {**meta, "call": step.native, "native": step.name,
                **({"marks": [m.as_dict() for m in step.marks]} if step.marks else {})}
        if step.action is None:
            return no_action(step.name, {**meta, "problem": step.problem})
        return dataclasses.replace(step.action, meta=meta)
