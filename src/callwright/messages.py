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
    content: str
    role: Literal["system"] = "system"


@dataclass(slots=True)
class UserMessage:
    content: str
    id: str | None = None
    role: Literal["user"] = "user"


@dataclass(slots=True)
class ToolCallPart:
    """One tool call as the model made it: the arguments are the parsed JSON object."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class AssistantMessage:
    text: str = ""
    tool_calls: list[ToolCallPart] = field(default_factory=list)
    reasoning: str = ""
    id: str | None = None
    role: Literal["assistant"] = "assistant"


@dataclass(slots=True)
class ToolResultMessage:
    """The one result every tool call gets before the next model turn."""

    call_id: str
    tool_name: str
    content: str
    is_error: bool = False
    role: Literal["tool"] = "tool"


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage


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
