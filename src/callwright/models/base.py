"""The one contract between the run loop and every model adapter.

An adapter turns a ``ModelRequest`` into ONE async stream of model events: text
and reasoning deltas, tool-call start / argument delta / end, and a finish with
usage and finish reason. The loop never learns which provider produced them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeAlias, runtime_checkable

from ..usage import Usage as Usage
from ._settings import NO_SETTINGS, ModelSettings

if TYPE_CHECKING:
    from ..context import CancelToken
    from ..messages import Message

Mode = Literal["native", "structured"]
ToolChoice = Literal["auto", "none", "required"] | str
"""``auto``, ``none``, ``required``, or a tool's name, which forces that tool."""


@dataclass(slots=True)
class ModelRequest:
    """What the loop asks of a model for one step.

    ``messages`` is the run's own list: adapters read it and never mutate it.
    """

    messages: list[Message]
    instructions: str | None = None
    """The system prompt."""
    mode: Mode = "native"
    tools: list[dict[str, Any]] = field(default_factory=list)
    """Native tool definitions (``name``, ``description``, ``parameters``), native mode."""
    tool_choice: ToolChoice = "auto"
    solution_schema: dict[str, Any] | None = None
    """The combined ``{meta, calls, output}`` schema, structured mode."""
    output_schema: dict[str, Any] | None = None
    """The schema of a structured final answer; ``None`` for a text answer."""
    cancel: CancelToken | None = None
    """The run's token: an adapter stops streaming and waiting once it fires."""
    step: int = 0
    settings: ModelSettings = NO_SETTINGS
    """The run's settings (the agent's, overridden by the run's); ``tool_choice`` is
    already resolved into ``tool_choice`` above."""


# --- model events -------------------------------------------------------------


@dataclass(slots=True)
class TextPart:
    """A piece of the answer text."""

    type: ClassVar[str] = "text"
    delta: str


@dataclass(slots=True)
class ReasoningPart:
    """A piece of the model's reasoning, shown apart from the answer."""

    type: ClassVar[str] = "reasoning"
    delta: str


@dataclass(slots=True)
class ToolCallStartPart:
    """A tool call begins; its arguments follow as deltas."""

    type: ClassVar[str] = "tool-call-start"
    call_id: str
    name: str


@dataclass(slots=True)
class ToolCallDeltaPart:
    """A piece of a call's JSON arguments; the pieces joined are the whole document."""

    type: ClassVar[str] = "tool-call-delta"
    call_id: str
    delta: str


@dataclass(slots=True)
class ToolCallEndPart:
    """A call's arguments are complete."""

    type: ClassVar[str] = "tool-call-end"
    call_id: str


@dataclass(slots=True)
class FinishPart:
    """The turn ended; always the last event of a turn that did not fail."""

    type: ClassVar[str] = "finish"
    reason: str = "stop"
    """``stop``, ``tool-calls``, ``length``, ``content-filter``, ``error`` or ``other``."""
    usage: Usage = field(default_factory=Usage)
    provider_blocks: dict[str, list[dict[str, Any]]] = field(default_factory=dict, compare=False)
    """Whole blocks the provider needs back unchanged in the next request, by provider
    name (Anthropic's signed ``thinking`` and ``redacted_thinking``); the run keeps them
    on the assistant message, and only that provider's adapter sends them back. Opaque
    payload, not part of what a finish is, so equality leaves it out."""


@dataclass(slots=True)
class ErrorPart:
    """A provider error that ended the step (after retries where they apply)."""

    type: ClassVar[str] = "error"
    message: str
    code: str = "model_error"


ModelEvent: TypeAlias = (
    TextPart
    | ReasoningPart
    | ToolCallStartPart
    | ToolCallDeltaPart
    | ToolCallEndPart
    | FinishPart
    | ErrorPart
)


@runtime_checkable
class Model(Protocol):
    """A model adapter. ``modes`` lists the request modes it supports, preferred first."""

    name: str
    modes: tuple[Mode, ...]

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]: ...


class ModelBase:
    """What callwright's adapters share beyond the ``Model`` protocol; a model of your own
    need not derive from it (``unconfigured`` then takes it as configured)."""

    def unconfigured(self) -> str | None:
        """Why the model cannot be asked yet (a missing key, binding or model file), in a
        short sentence with no secret, URL or path; None when it can. Makes no network
        call: a readiness probe asks it every few seconds."""
        return None

    def check_settings(self, settings: ModelSettings) -> None:
        """Raise a ``ConfigurationError`` naming a setting this model cannot take; checked
        when an agent or a run is given settings, and again by the adapter at each step."""


def check_settings(model: Model, settings: ModelSettings) -> None:
    """``model.check_settings(settings)`` when the model has it (a model of your own
    may not: it then reads ``ModelRequest.settings`` as it likes)."""
    check = getattr(model, "check_settings", None)
    if callable(check):
        check(settings)


def unconfigured(model: Model) -> str | None:
    """``model.unconfigured()`` when the model has it, else None (a model of your own)."""
    check = getattr(model, "unconfigured", None)
    if not callable(check):
        return None
    reason = check()
    return reason if isinstance(reason, str) else None
