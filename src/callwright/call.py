"""One tool call, its single state machine, and what it produces.

The states are the AI SDK's tool-part states so both wire encoders map them
one to one. Every model adapter and both protocols drive the same ``Call``; an
illegal transition is a bug in callwright, so it raises instead of being
smoothed over.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import jiter

if TYPE_CHECKING:
    from .tool import Tool


class CallState(StrEnum):
    INPUT_STREAMING = "input-streaming"
    INPUT_AVAILABLE = "input-available"
    APPROVAL_REQUESTED = "approval-requested"
    APPROVAL_RESPONDED = "approval-responded"
    OUTPUT_AVAILABLE = "output-available"
    OUTPUT_ERROR = "output-error"
    OUTPUT_DENIED = "output-denied"


_S = CallState
TRANSITIONS: dict[CallState, frozenset[CallState]] = {
    _S.INPUT_STREAMING: frozenset({_S.INPUT_AVAILABLE, _S.OUTPUT_ERROR}),
    _S.INPUT_AVAILABLE: frozenset({_S.APPROVAL_REQUESTED, _S.OUTPUT_AVAILABLE, _S.OUTPUT_ERROR}),
    _S.APPROVAL_REQUESTED: frozenset({_S.APPROVAL_RESPONDED, _S.OUTPUT_ERROR}),
    _S.APPROVAL_RESPONDED: frozenset({_S.OUTPUT_AVAILABLE, _S.OUTPUT_ERROR, _S.OUTPUT_DENIED}),
    _S.OUTPUT_AVAILABLE: frozenset(),
    _S.OUTPUT_ERROR: frozenset(),
    _S.OUTPUT_DENIED: frozenset(),
}
TERMINAL = frozenset({_S.OUTPUT_AVAILABLE, _S.OUTPUT_ERROR, _S.OUTPUT_DENIED})


class IllegalTransition(RuntimeError):
    """A call was driven through a transition the state machine does not have."""


# --- results and errors -------------------------------------------------------


@dataclass(slots=True)
class ToolResult:
    """What a tool produced: ``content`` goes to the model, ``details`` only to UIs and logs."""

    content: Any
    details: Any = None


def to_model_text(value: Any) -> str:
    """The text the model sees for a tool's output."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class ToolError(Exception):
    """A failure the model should see as an error result so it can recover.

    Raise it (or a subclass) from a tool; any other exception is wrapped as a
    failure with its message. The run always goes on.
    """

    kind = "failed"

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message

    def model_text(self) -> str:
        return self.message


class ToolNotFound(ToolError):
    kind = "not-found"

    def __init__(self, name: str, available: list[str] | None = None) -> None:
        super().__init__(name)
        self.available = available or []

    def model_text(self) -> str:
        text = f"Tool not found: {self.message}."
        if self.available:
            text += " Available tools: " + ", ".join(self.available) + "."
        return text


class InvalidArgs(ToolError):
    kind = "invalid-args"

    def model_text(self) -> str:
        return f"Invalid arguments: {self.message}"


class Cancelled(ToolError):
    kind = "cancelled"

    def model_text(self) -> str:
        return "Cancelled" + (f": {self.message}" if self.message else "")


class TimedOut(ToolError):
    kind = "timed-out"

    def __init__(self, seconds: float) -> None:
        super().__init__(f"{seconds:g}s")
        self.seconds = seconds

    def model_text(self) -> str:
        return f"Timed out after {self.seconds:g} seconds."


class Denied(ToolError):
    kind = "denied"

    def model_text(self) -> str:
        return "Tool call denied" + (f": {self.message}" if self.message else ".")


class Skipped(ToolError):
    kind = "skipped"

    def __init__(self, message: str = "Skipped due to queued user message.") -> None:
        super().__init__(message)


class Interrupted(ToolError):
    kind = "interrupted"

    def model_text(self) -> str:
        return self.message or (
            "Interrupted: the server stopped while this tool was running; it was not run again."
        )


# --- streamed arguments -------------------------------------------------------


class ArgumentBuffer:
    """Accumulates streamed argument JSON.

    Each delta costs O(len(delta)): chunks are kept in a list and joined only
    when the partial value is asked for or the arguments are complete, so a
    long argument stream never re-parses the whole buffer per chunk.
    """

    __slots__ = ("_chunks", "_text")

    def __init__(self, initial: str = "") -> None:
        self._chunks: list[str] = [initial] if initial else []
        self._text: str | None = initial

    def append(self, delta: str) -> None:
        self._chunks.append(delta)
        self._text = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "".join(self._chunks)
            self._chunks = [self._text]
        return self._text

    def partial(self) -> Any:
        """The value parsed so far (incomplete strings included), or None before any."""
        text = self.text
        if not text.strip():
            return None
        try:
            return jiter.from_json(text.encode(), partial_mode="trailing-strings")
        except ValueError:
            return None

    def parse(self) -> Any:
        """The complete value; raises InvalidArgs for malformed JSON."""
        text = self.text
        if not text.strip():
            return {}
        try:
            return jiter.from_json(text.encode())
        except ValueError as exc:
            raise InvalidArgs(f"malformed JSON ({exc})") from None


OUTPUT_TOOL = "final_result"
"""The tool through which a native-mode model hands over the run's structured output."""


def is_meta(key: str) -> bool:
    """Acts meta fields (``_outputPath``, ``_instance``, ...) start with an underscore."""
    return key.startswith("_")


def strip_meta(arguments: dict[str, Any]) -> dict[str, Any]:
    """The parameters alone: what a tool, a signature or an approval compares."""
    return {k: v for k, v in arguments.items() if not is_meta(k)}


def split_meta(arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A call's arguments as (parameters, ``_`` meta fields): meta never reaches the tool."""
    meta = {k: v for k, v in arguments.items() if is_meta(k)}
    return strip_meta(arguments), meta


# --- approvals ----------------------------------------------------------------


@dataclass(slots=True)
class Decision:
    """A human's answer to an approval request, keyed by call id when resuming."""

    approved: bool
    reason: str | None = None
    arguments: dict[str, Any] | None = None  # edited arguments, where the tool allows edits


# --- the call -----------------------------------------------------------------


@dataclass(slots=True, eq=False)
class Call:
    id: str
    tool_name: str
    index: int = 0
    tool: Tool | None = None
    state: CallState = CallState.INPUT_STREAMING
    buffer: ArgumentBuffer = field(default_factory=ArgumentBuffer)
    arguments: dict[str, Any] | None = None  # parameters only, validated
    meta: dict[str, Any] = field(default_factory=dict)  # `_`-prefixed call meta
    validated: Any = None  # what the executor receives (e.g. a pydantic model's fields)
    deferred: bool = False  # arguments hold † references: validated once they are resolved
    approval_id: str | None = None
    decision: Decision | None = None
    result: ToolResult | None = None
    error: ToolError | None = None
    message_id: str | None = None

    def transition(self, new: CallState) -> None:
        if new not in TRANSITIONS[self.state]:
            raise IllegalTransition(f"call {self.id}: {self.state} -> {new}")
        self.state = new

    @property
    def done(self) -> bool:
        return self.state in TERMINAL

    @property
    def raw_arguments(self) -> dict[str, Any]:
        """Parameters plus meta, as the model wrote them (for history and journals)."""
        if self.arguments is None:
            return dict(self.meta)
        if not self.meta:
            return self.arguments
        return {**self.meta, **self.arguments}

    def succeed(self, result: ToolResult) -> None:
        self.transition(CallState.OUTPUT_AVAILABLE)
        self.result = result

    def fail(self, error: ToolError) -> None:
        if isinstance(error, Denied):
            self.transition(CallState.OUTPUT_DENIED)
        else:
            self.transition(CallState.OUTPUT_ERROR)
        self.error = error

    def model_text(self) -> str:
        """The one result the model sees for this call."""
        if self.error is not None:
            return self.error.model_text()
        if self.result is not None:
            return to_model_text(self.result.content)
        raise IllegalTransition(f"call {self.id} has no result in state {self.state}")
