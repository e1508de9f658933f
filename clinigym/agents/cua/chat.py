"""The chat-completions formats (UI-TARS, Qwen, JSON): each one's prompt, parser and
writer over one shared dialogue, a transcript of the episode's turns (`history`). What the
observation shows besides the screenshot goes with the current one (`families.observed`);
in the som mode a call may name a mark instead of coordinates (each format's `mark_hint`)."""
from __future__ import annotations

from typing import Any

from clinigym.agents.cua.base import Reading, ReplyError, Settings, Sizes, Step
from clinigym.agents.cua.history import History, Turn
from clinigym.agents.families.coords import Point, Size, Space
from clinigym.agents.families.observed import Marks
from clinigym.agents.families.resize import AsIs, SmartResize
from clinigym.core.actions import Action


class ChatFormat:
    """A model spoken to over /chat/completions. Subclasses give the published prompt
    (`messages`), the parser of its answer into steps (`parse`) and its inverse for test
    servers (`write`, within the coordinate quantum)."""
    api = "chat.completions"       # as `families.Prompt.api` names it
    name: str
    description: str
    coords: str                  # the native coordinates, in words
    sources: tuple[str, ...]
    space: Space
    resize: SmartResize | AsIs
    mark_hint: str                 # how a call names a mark in the som mode

    def sizes(self, observation: Size) -> Sizes:
        return Sizes(observation, self.resize.size(observation))

    def dialogue(self, settings: Settings) -> ChatDialogue:
        return ChatDialogue(self, settings)

    def messages(self, task: str, history: History, image_url: str | None, sizes: Sizes,
                 actions: tuple[str, ...], text: str | None = None) -> list[dict[str, Any]]:
        raise NotImplementedError

    def parse(self, text: str, sizes: Sizes, cursor: Point | None, marks: Marks | None = None) -> Reading:
        raise NotImplementedError

    def write(self, action: Action, sizes: Sizes) -> str:
        raise NotImplementedError

    # -- coordinates, shared by the parsers and writers ----------------------------------
    def to_obs(self, native: Point, sizes: Sizes) -> Point:
        return self.space.to_observation(native, sizes.observation, sizes.sent)

    def to_native(self, point: Point, sizes: Sizes) -> tuple[str, str]:
        """An observation point as the model writes it (at its precision)."""
        x, y = self.space.quantise(point, sizes.observation, sizes.sent)
        return self.space.text(x), self.space.text(y)

    def quantum(self, sizes: Sizes) -> Point:
        return self.space.quantum(sizes.observation, sizes.sent)


class ChatDialogue:
    path = "chat/completions"

    def __init__(self, fmt: ChatFormat, settings: Settings):
        self.fmt, self.settings = fmt, settings
        self.history = History(settings.images)

    def reset(self) -> None:
        self.history.reset()

    def observed(self, image_url: str | None) -> None:
        pass   # the next request carries the screenshot itself

    def handed(self, step: Step) -> None:
        pass

    def request(self, task: str, image_url: str | None, sizes: Sizes, text: str | None = None) -> dict[str, Any]:
        return {"messages": self.fmt.messages(task, self.history, image_url, sizes, self.settings.actions, text),
                "temperature": self.settings.temperature, "max_tokens": self.settings.max_tokens}

    def read(self, reply: dict[str, Any], image_url: str | None, sizes: Sizes, cursor: Point | None,
             marks: Marks | None = None) -> Reading:
        try:
            text = reply["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise ReplyError(f"not a chat completion: {str(reply)[:200]}") from None
        # Every answer joins the transcript, an unusable one too: the model sees what it said.
        self.history.add(Turn(image_url, text))
        return self.fmt.parse(text, sizes, cursor, marks)
