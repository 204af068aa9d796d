"""The conversation as the run loop keeps it, independent of provider and wire format.

Model adapters translate these into their provider's shape; the wire decoders
build them from AG-UI or AI SDK requests. Plain slotted dataclasses keep the hot
loop cheap: a run appends to a list, it never copies or re-validates history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field, TypeAdapter, ValidationError


@dataclass(slots=True)
class SystemMessage:
    """Instructions placed in the conversation (a front end's system prompt or context)."""

    content: str
    """The instructions' text."""
    role: Literal["system"] = "system"
    """The discriminator that tells messages apart when history is loaded from JSON."""


@dataclass(slots=True)
class UserMessage:
    """What the user said: the prompt, or a later message sent to steer a running agent."""

    content: str
    """The user's text."""
    id: str | None = None
    """The front end's id for the message, kept so its UI can match it up; None when unset."""
    role: Literal["user"] = "user"
    """The discriminator that tells messages apart when history is loaded from JSON."""


@dataclass(slots=True)
class ToolCallPart:
    """One tool call as the model made it: the arguments are the parsed JSON object."""

    id: str
    """The call's id: its ``ToolResultMessage`` answers it by this id."""
    name: str
    """The tool the model called."""
    arguments: dict[str, Any]
    """The arguments as the model wrote them, ``_`` meta fields included."""


@dataclass(slots=True)
class AssistantMessage:
    """One model turn as it enters the history: its text, its reasoning and its calls."""

    text: str = ""
    """The visible answer text (all of the turn's text segments joined)."""
    tool_calls: list[ToolCallPart] = field(default_factory=list)
    """The calls the model made, in its order; each gets one result before the next turn."""
    reasoning: str = ""
    """The model's reasoning, where the provider streams it: shown apart from the answer."""
    id: str | None = None
    """The id the step's events carried (or the front end's), so both copies match up."""
    provider_blocks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Blocks a provider wants back unchanged in later requests, by provider name, e.g.
    Anthropic's ``thinking`` (with its ``signature``) and ``redacted_thinking`` blocks.
    Opaque to everything but that provider's adapter; other adapters ignore them."""
    role: Literal["assistant"] = "assistant"
    """The discriminator that tells messages apart when history is loaded from JSON."""


@dataclass(slots=True)
class ToolResultMessage:
    """The one result every tool call gets before the next model turn."""

    call_id: str
    """The ``ToolCallPart`` this answers."""
    tool_name: str
    """The tool that was called (some providers want the name beside the id)."""
    content: str
    """The text the model sees for the call."""
    is_error: bool = False
    """True when the call failed or was denied, so providers can flag the result as an error."""
    role: Literal["tool"] = "tool"
    """The discriminator that tells messages apart when history is loaded from JSON."""


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage
"""Any message of a conversation; ``role`` tells them apart."""


def as_messages(prompt: str | Message | list[Message]) -> list[Message]:
    """Accept the forms users pass to ``Agent.run``: a string, one message, or a list."""
    if isinstance(prompt, str):
        return [UserMessage(prompt)]
    if isinstance(prompt, list):
        return list(prompt)
    return [prompt]


MessageHistory: TypeAdapter[list[Message]] = TypeAdapter(
    list[Annotated[Message, Field(discriminator="role")]]
)
"""Dumps and loads a conversation as JSON, e.g. to keep a paused run's history::

    data = MessageHistory.dump_json(result.messages)
    messages = MessageHistory.validate_json(data)
"""

_ONE: TypeAdapter[Message] = TypeAdapter(Annotated[Message, Field(discriminator="role")])


def message_to_dict(message: Message) -> dict[str, Any]:
    """A JSON-ready dict (for journals), without the fields that are None."""
    data: dict[str, Any] = _ONE.dump_python(message, mode="json", exclude_none=True)
    return data


def message_from_dict(data: dict[str, Any]) -> Message:
    """The message a dict from ``message_to_dict`` (or a journal) describes."""
    try:
        return _ONE.validate_python(data)
    except ValidationError as exc:
        raise ValueError(f"not a message: {exc.errors(include_url=False)[0]['msg']}") from None
