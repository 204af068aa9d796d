"""The conversation as the run loop keeps it, independent of provider and wire format.

Model adapters translate these into their provider's shape; the wire decoders
build them from AG-UI or AI SDK requests. Plain slotted dataclasses keep the hot
loop cheap: a run appends to a list, it never copies or re-validates history.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeAlias


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


def message_to_dict(message: Message) -> dict[str, Any]:
    """A JSON-ready dict (for journals): the dataclass fields, ``role`` first."""
    data = asdict(message)
    return {"role": data.pop("role"), **{k: v for k, v in data.items() if v is not None}}


def message_from_dict(data: dict[str, Any]) -> Message:
    role = data.get("role")
    fields = {k: v for k, v in data.items() if k != "role"}
    if role == "user":
        return UserMessage(**fields)
    if role == "system":
        return SystemMessage(**fields)
    if role == "tool":
        return ToolResultMessage(**fields)
    if role == "assistant":
        calls = [ToolCallPart(**c) for c in fields.pop("tool_calls", [])]
        return AssistantMessage(tool_calls=calls, **fields)
    raise ValueError(f"unknown message role {role!r}")
