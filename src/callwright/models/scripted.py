"""A deterministic model for tests and benchmarks: it streams text, reasoning and
tool-call deltas from a script, or from a function of the request."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..usage import Usage
from .base import (
    ErrorPart,
    FinishPart,
    Mode,
    ModelBase,
    ModelEvent,
    ModelRequest,
    ReasoningPart,
    TextPart,
    ToolCallDeltaPart,
    ToolCallEndPart,
    ToolCallStartPart,
)


@dataclass(slots=True)
class ScriptedCall:
    """A tool call the scripted model makes."""

    name: str
    arguments: dict[str, Any] | str
    """The arguments, or their JSON text as the model should write it (valid or not)."""
    id: str | None = None
    """The call id; ``call_<turn>_<item>`` when not given."""
    chunks: Sequence[str] | None = None
    """The argument text split as it should stream; one delta when not given."""


@dataclass(slots=True)
class ScriptedReasoning:
    """Reasoning text the scripted model streams."""

    text: str


Item = str | ScriptedCall | ScriptedReasoning | ModelEvent
Turn = Sequence[Item]
Script = Sequence[Turn] | Callable[[ModelRequest], Turn]


def call(
    name: str,
    arguments: dict[str, Any] | str | None = None,
    *,
    id: str | None = None,
    chunks: Sequence[str] | None = None,
) -> ScriptedCall:
    return ScriptedCall(name, {} if arguments is None else arguments, id, chunks)


def think(text: str) -> ScriptedReasoning:
    return ScriptedReasoning(text)


class ScriptedModel(ModelBase):
    """Plays one turn of the script per model request.

    With a list, turn N answers request N; with a function, the turn is computed
    from the request (so it can depend on the conversation). Requests are
    recorded (with a copy of the history) for tests to inspect unless
    ``record=False``, which benchmarks use to keep each step O(1). Text items stream
    word by word when ``split_text`` is set, as a real model would; ``delay`` seconds
    pass before each part, as with a slow provider.
    """

    def __init__(
        self,
        script: Script,
        *,
        name: str = "scripted",
        modes: tuple[Mode, ...] = ("native",),
        split_text: bool = False,
        record: bool = True,
        delay: float = 0.0,
    ) -> None:
        self.name = name
        self.modes = modes
        self._script = script
        self._split_text = split_text
        self._record = record
        self._delay = delay
        self.requests: list[ModelRequest] = []
        self._calls = 0

    def _next_turn(self, request: ModelRequest) -> Turn | None:
        if callable(self._script):
            return self._script(request)
        if self._calls >= len(self._script):
            return None
        return self._script[self._calls]

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        parts = self._parts(request)
        return _slowly(parts, self._delay) if self._delay else parts

    async def _parts(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if self._record:  # a snapshot: the loop keeps appending to its own list
            self.requests.append(replace(request, messages=list(request.messages)))
        turn = self._next_turn(request)
        index = self._calls
        self._calls += 1
        if turn is None:
            yield ErrorPart("the scripted model has no more turns", code="script_exhausted")
            return
        has_calls = False
        for i, item in enumerate(turn):
            if isinstance(item, str):
                for piece in _split(item) if self._split_text else (item,):
                    yield TextPart(piece)
            elif isinstance(item, ScriptedCall):
                has_calls = True
                call_id = item.id or f"call_{index}_{i}"
                yield ToolCallStartPart(call_id, item.name)
                text = (
                    item.arguments
                    if isinstance(item.arguments, str)
                    else json.dumps(item.arguments, separators=(",", ":"))
                )
                for chunk in item.chunks if item.chunks is not None else (text,):
                    yield ToolCallDeltaPart(call_id, chunk)
                yield ToolCallEndPart(call_id)
            elif isinstance(item, ScriptedReasoning):
                yield ReasoningPart(item.text)
            else:
                yield item
        yield FinishPart("tool-calls" if has_calls else "stop", Usage(10, 5, 1))


async def _slowly(parts: AsyncIterator[ModelEvent], delay: float) -> AsyncIterator[ModelEvent]:
    async for part in parts:
        await asyncio.sleep(delay)
        yield part


def _split(text: str) -> list[str]:
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]]
