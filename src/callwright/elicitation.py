"""A running tool asks a human for input: the run pauses, the answer resumes the call.

This is MCP's elicitation carried through to a front end, as one seam: a tool (an
MCP server's tool, through ``callwright.mcp``) raises ``InputRequired``; the executor
leaves the call open and lists it as a pending call of kind ``input``; the run ends
paused, exactly as for an approval. The next run is given an ``InputAnswer`` for the
call (a front end's answer, checked by the server against the request it issued), and
the executor runs the tool again with the answer in ``ToolContext.answer``: the tool
picks up where it asked.

``InputRequest.state`` is the tool's own (an MCP call parked in this process, say):
the server keeps it with the request it issued and never sends it to a client.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

from ._errors import ConfigurationError

InputAction = Literal["accept", "decline", "cancel"]
"""MCP's three answers: the human filled the form in, refused, or dismissed it."""

INPUT_ID_PREFIX = "inp_"
"""Input request ids start with it, so a protocol can tell them from approval ids."""


def new_input_id() -> str:
    """Unguessable, and recognisably an input request's (``inp_``) rather than an approval's."""
    return INPUT_ID_PREFIX + secrets.token_urlsafe(18)


def is_input_id(value: str) -> bool:
    return value.startswith(INPUT_ID_PREFIX)


@dataclass(slots=True)
class InputRequest:
    """A question a running call puts to a human, with the form of the answer it wants."""

    message: str
    """What to ask, in the tool's words."""
    schema: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    """The JSON Schema of the answer's content (MCP's ``requestedSchema``): flat, primitive
    properties a front end can render as a form."""
    state: Any = None
    """What the tool needs to go on when the answer comes (kept by the server, never sent)."""
    url: str | None = None
    """For MCP's URL-mode elicitation: the page the human should open instead of a form."""
    id: str = field(default_factory=new_input_id)
    """The id an answer must carry (``inp_...``)."""


@dataclass(slots=True)
class InputAnswer:
    """A human's answer to an ``InputRequest``; pass it in ``decisions`` (keyed by call id).

    Build one with ``InputAnswer.accept(content)``, ``.decline()`` or ``.cancel()``.
    """

    action: InputAction
    """``accept`` (``content`` holds the form), ``decline`` or ``cancel``."""
    content: dict[str, Any] | None = None
    """The filled-in form, for ``accept``."""
    request: InputRequest | None = None
    """The request answered (the server fills it in from the one it issued)."""

    def __post_init__(self) -> None:
        if self.action not in ("accept", "decline", "cancel"):
            raise ConfigurationError(
                f"an input answer is accept, decline or cancel, not {self.action!r}"
            )

    @classmethod
    def accept(
        cls, content: dict[str, Any] | None = None, *, request: InputRequest | None = None
    ) -> InputAnswer:
        """The human filled the form in; ``content`` holds what they entered. Pass the
        pending call's ``request`` when answering in code: a tool may need its ``state``."""
        return cls("accept", content, request)

    @classmethod
    def decline(cls, *, request: InputRequest | None = None) -> InputAnswer:
        """The human refused to answer."""
        return cls("decline", None, request)

    @classmethod
    def cancel(cls, *, request: InputRequest | None = None) -> InputAnswer:
        """The human dismissed the question without choosing."""
        return cls("cancel", None, request)


class InputRequired(Exception):
    """Raised by a running tool to ask a human; the call stays open and the run pauses.

    Not a ``ToolError``: the call gets no result now. When the run resumes with an
    ``InputAnswer``, the tool runs again and reads it from ``ToolContext.answer``.
    """

    def __init__(self, request: InputRequest) -> None:
        super().__init__(request.message)
        self.request = request
