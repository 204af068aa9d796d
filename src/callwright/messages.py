"""The conversation as the run loop keeps it, independent of provider and wire format.

Model adapters translate these into their provider's shape; the wire decoders
build them from AG-UI or AI SDK requests. Plain slotted dataclasses keep the hot
loop cheap: a run appends to a list, it never copies or re-validates history.

Files and images a user attaches are ``FilePart``s on the ``UserMessage``: inline
bytes (base64, as both wire protocols carry them) or an https URL that the model
provider fetches. callwright itself never fetches a URL (a server that fetched
what a client names could be made to reach its own network).
"""

from __future__ import annotations

import base64
import binascii
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
class FilePart:
    """A file or image attached to a user message, for the models that can read it.

    Exactly one of ``data`` and ``url``. Kept as base64 text rather than bytes so the
    message stays JSON as it is (journals, ``MessageHistory``) and providers get the
    encoding they want without a second pass.
    """

    media_type: str
    """The IANA media type (``image/png``, ``application/pdf``, ``text/plain`` ...). A
    URL part may carry a bare top-level type (``image``) where the client sent only that."""
    data: str | None = None
    """The bytes, base64-encoded (standard alphabet); None for a URL part."""
    url: str | None = None
    """An https URL the model provider fetches itself; callwright never fetches it."""
    filename: str | None = None
    """The file's name as the user's client gave it; None when it sent none."""
    type: Literal["file"] = "file"
    """Tells a file part apart from other parts when a message is loaded from JSON."""

    def __post_init__(self) -> None:
        if (self.data is None) == (self.url is None):
            raise ValueError("a FilePart needs exactly one of data and url")

    @classmethod
    def from_bytes(cls, content: bytes, media_type: str, filename: str | None = None) -> FilePart:
        """A part holding ``content`` inline, e.g. an image read from disk."""
        return cls(media_type, data=base64.b64encode(content).decode("ascii"), filename=filename)

    def content(self) -> bytes:
        """The bytes of an inline part (a ``ValueError`` for a URL part or bad base64)."""
        if self.data is None:
            raise ValueError("a URL part has no bytes here: the provider fetches it")
        try:
            return base64.b64decode(self.data, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"the part's data is not base64: {exc}") from None

    def data_url(self) -> str:
        """The part as one URL: its own for a URL part, else a base64 ``data:`` URL."""
        if self.url is not None:
            return self.url
        return f"data:{self.media_type};base64,{self.data}"

    @property
    def top_type(self) -> str:
        """The top-level media type (``image``, ``application``, ``text`` ...)."""
        return self.media_type.partition("/")[0]


@dataclass(slots=True)
class UserMessage:
    """What the user said: the prompt, or a later message sent to steer a running agent."""

    content: str
    """The user's text."""
    id: str | None = None
    """The front end's id for the message, kept so its UI can match it up; None when unset."""
    files: list[FilePart] = field(default_factory=list)
    """Files and images sent with the text, in the order the client sent them. Models
    get them before the text; one that cannot read files fails the step saying so."""
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
    files: list[FilePart] = field(default_factory=list)
    """Images, audio and documents the tool returned: models get them after the text
    where their provider takes files in (or beside) a tool result, else a text stand-in."""
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


def last_assistant_index(messages: list[Message]) -> int:
    """The index of the last assistant message (-1: none)."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], AssistantMessage):
            return i
    return -1


def merge_results(messages: list[Message], results: list[ToolResultMessage]) -> None:
    """Resuming: the results already in history and the new ones, sorted into call order."""
    index = last_assistant_index(messages)
    assistant = messages[index]
    assert isinstance(assistant, AssistantMessage)
    order = {part.id: i for i, part in enumerate(assistant.tool_calls)}
    tail = messages[index + 1 :]
    existing = [m for m in tail if isinstance(m, ToolResultMessage)]
    others = [m for m in tail if not isinstance(m, ToolResultMessage)]
    merged = sorted([*existing, *results], key=lambda m: order.get(m.call_id, len(order)))
    messages[index + 1 :] = [*merged, *others]
