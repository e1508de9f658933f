"""What every computer-use format shares: the sizes of one request, a model's native call
mapped onto the environment's vocabulary (or refused, with the reason), key names, wheel
notches, and the form of a turn that the environment must report as invalid."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from clinigym.agents.families.coords import Point, Size
from clinigym.agents.families.observed import Marks
from clinigym.agents.http import ModelError
from clinigym.core.actions import Action
from clinigym.core.errors import ClinigymError
from clinigym.core.marks import Mark


@dataclass(frozen=True)
class Sizes:
    """One request's geometry: the observation the agent got and the image it sends
    (the format's resize of it); native coordinates are read against both."""
    observation: Size
    sent: Size


@dataclass(frozen=True)
class Step:
    """One call of the model's answer: its text, its own action name, and the environment
    action it means, or None with the reason when it has none (e.g. a triple click)."""
    native: str
    name: str
    action: Action | None
    problem: str | None = None
    call_id: str | None = None       # the Responses API call this step answers
    marks: tuple[Mark, ...] = ()     # the marks it names for its points (som mode), in order


def to_step(native: str, name: str, mapped: Action | str, call_id: str | None = None,
            marks: tuple[Mark, ...] = ()) -> Step:
    """A call mapped to an action, or refused with the reason a mapper gave instead."""
    if isinstance(mapped, Action):
        return Step(native, name, mapped, None, call_id, marks)
    return Step(native, name, None, mapped, call_id)


@dataclass(frozen=True)
class Reading:
    """A model's answer, read: its raw text, its steps in order, and what else it said."""
    text: str
    steps: list[Step]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Settings:
    """Per-agent options that shape each request."""
    images: int = 3                       # screenshots per request, the current one included
    max_tokens: int = 1024                # chat-completions requests (the Responses API: server's own)
    temperature: float = 0.0              # likewise
    actions: tuple[str, ...] = ()         # the environment's action types (for prompts that list them)


class Dialogue(Protocol):
    """One episode's conversation with the model in its API's shape (a chat transcript,
    or a Responses API chain)."""
    path: str                             # the endpoint under the base URL

    def reset(self) -> None: ...

    def observed(self, image_url: str | None) -> None:
        """The screenshot after the last handed-out step (before anything else is asked);
        None in a mode without one."""

    def request(self, task: str, image_url: str | None, sizes: Sizes, text: str | None = None) -> dict[str, Any]:
        """The request of a turn: the screenshot, and what else the observation shows
        (`clinigym.agents.families.observed`)."""

    def read(self, reply: dict[str, Any], image_url: str | None, sizes: Sizes, cursor: Point | None,
             marks: Marks | None = None) -> Reading:
        """The reply, read; `marks` are the screen's marks that calls may name (som mode)."""

    def handed(self, step: Step) -> None:
        """`step` is returned to the environment now."""


class Unexpressible(ClinigymError, ValueError):
    """An action a format has no way to write (raised by the writers of test servers)."""


class ReplyError(ModelError):
    """A reply that is not of the API's shape."""


def no_action(name: str | None, meta: dict[str, Any]) -> dict[str, Any]:
    """A turn with nothing the environment can execute: the dict form with the model's
    own action name as its type (None when there is none), which the environment reports
    in info["invalid_action"] and records whole, meta included."""
    return {"type": name, "meta": meta}


def last_pointer(steps: Iterable[Step], cursor: Point | None) -> Point | None:
    """Where the pointer is after these steps (a drag leaves it at its end)."""
    for step in steps:
        a = step.action
        if a is not None and (a.end_point or a.point):
            cursor = a.end_point or a.point
    return cursor


# --- keys -------------------------------------------------------------------------------

# Model key names the display does not know under that name (clinigym.runtime.display reads
# its own aliases case-insensitively, then X keysym names): UI-TARS' and OpenAI's browser
# names (ArrowLeft, CapsLock, Option), pyautogui's function keys in lower case.
_KEY_NAMES = {"arrowleft": "left", "arrowright": "right", "arrowup": "up", "arrowdown": "down",
              "option": "alt", "capslock": "Caps_Lock", "pgup": "pageup", "pgdn": "pagedown",
              "+": "plus", " ": "space"}
_FUNCTION_KEY = re.compile(r"f\d{1,2}")


def env_key(name: str) -> str:
    """One model key name as the display's: a single character or a shouted or lower-case
    word in lower case (CTRL, ENTER: the display's aliases are case-blind), any other X
    keysym name (Caps_Lock, KP_0, Page_Up) as is."""
    low = name.lower() if name.strip() else name
    if low in _KEY_NAMES:
        return _KEY_NAMES[low]
    if _FUNCTION_KEY.fullmatch(low.strip()):
        return low.strip().upper()
    name = name.strip()
    return name.lower() if len(name) == 1 or (name.isalpha() and (name.isupper() or name.islower())) else name


def key_combo(names: Iterable[str]) -> str:
    return "+".join(env_key(n) for n in names if n != "")


def combo_keys(combo: str) -> list[str]:
    """A combination's key names (the inverse of key_combo, for writers)."""
    return [k for k in combo.split("+") if k]


# --- scrolling --------------------------------------------------------------------------

# OpenAI's scroll_x / scroll_y are pixels (the sample app's browser computer passes them to
# mouse.wheel); the environment scrolls in wheel notches. One notch = 100 pixels, Chromium's
# wheel step on Linux, the unit the OpenAI format's scrolls are converted with both ways.
NOTCH_PIXELS = 100


def notches(pixels: float) -> int:
    """Wheel notches for a scroll in pixels; a non-zero scroll is at least one notch."""
    n = round(pixels / NOTCH_PIXELS)
    return n if n or not pixels else (1 if pixels > 0 else -1)


# --- recording --------------------------------------------------------------------------

def redact(value: Any) -> Any:
    """A request as recorded: every data URL replaced by a marker (the screenshots are
    in the recording's PNGs)."""
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, str) and value.startswith("data:image/"):
        return "<screenshot>"
    return value
