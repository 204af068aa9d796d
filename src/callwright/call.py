"""One tool call, its single state machine, and what it produces.

The states are the AI SDK's tool-part states so both wire encoders map them
one to one. Every model adapter and both protocols drive the same ``Call``; an
illegal transition is a bug in callwright, so it raises instead of being
smoothed over.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

import jiter

from ._errors import CallwrightError

if TYPE_CHECKING:
    from .messages import FilePart
    from .tool import Tool


class CallState(StrEnum):
    """Where a call is in its life; the values are the AI SDK's tool-part states."""

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
"""The legal next states of each state: ``Call.transition`` refuses anything else."""
TERMINAL = frozenset({_S.OUTPUT_AVAILABLE, _S.OUTPUT_ERROR, _S.OUTPUT_DENIED})
"""The states a call ends in: it has its one result."""


class IllegalTransition(CallwrightError, RuntimeError):
    """A call was driven through a transition the state machine does not have."""


# --- results and errors -------------------------------------------------------


@dataclass(slots=True)
class ToolResult:
    """What a tool produced: ``content`` goes to the model, ``details`` only to UIs and logs."""

    content: Any
    """The value UIs show as the output; the model sees it as text (non-strings as JSON)."""
    details: Any = None
    """Extra data for UIs and logs that is kept out of the model's context."""
    text: str | None = None
    """What the model sees instead of ``content`` as JSON (an MCP tool's text beside its
    structured content); None: the model sees ``content``."""
    artifact: dict[str, Any] | None = None
    """Where a result too large for the model was stored (``callwright.artifacts``): its
    id, download path, size; None for a result given whole."""
    files: list[FilePart] = field(default_factory=list)
    """Images, audio and documents the tool returned beside ``content`` (``callwright.File``):
    the model sees them where its provider takes files, UIs show them."""


def to_model_text(value: Any) -> str:
    """The text the model sees for a tool's output."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class ToolError(CallwrightError):
    """A failure the model should see as an error result so it can recover.

    Raise it (or a subclass) from a tool; any other exception is wrapped as a
    failure with its message. The run always goes on.
    """

    kind = "failed"
    """A stable name for the failure, sent to UIs as the result's ``error_kind``."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message

    def model_text(self) -> str:
        """The result text the model sees; subclasses phrase it so the model can react."""
        return self.message


class ToolNotFound(ToolError):
    """The model called a tool the run does not have; the result lists the ones it has."""

    kind = "not-found"

    def __init__(self, name: str, available: list[str] | None = None) -> None:
        super().__init__(name)
        self.available = available or []

    def model_text(self) -> str:
        """Names the missing tool and the available ones, so the model can pick again."""
        text = f"Tool not found: {self.message}."
        if self.available:
            text += " Available tools: " + ", ".join(self.available) + "."
        return text


class InvalidArgs(ToolError):
    """The arguments are malformed JSON or do not match the tool's schema."""

    kind = "invalid-args"

    def model_text(self) -> str:
        """The validation message, marked as an argument problem the model can fix."""
        return f"Invalid arguments: {self.message}"


class Cancelled(ToolError):
    """The call was stopped, or never started, because the run was cancelled or cannot go on."""

    kind = "cancelled"

    def model_text(self) -> str:
        """Says the call was cancelled, with the reason where one was given."""
        return "Cancelled" + (f": {self.message}" if self.message else "")


class TimedOut(ToolError):
    """The tool ran past its timeout (its own, or the agent's default) and was stopped."""

    kind = "timed-out"

    def __init__(self, seconds: float) -> None:
        super().__init__(f"{seconds:g}s")
        self.seconds = seconds

    def model_text(self) -> str:
        """Says how long the tool had, so the model can retry with less work or give up."""
        return f"Timed out after {self.seconds:g} seconds."


class Denied(ToolError):
    """A human refused the call; it ends output-denied rather than output-error."""

    kind = "denied"

    def model_text(self) -> str:
        """Says the call was denied, with the human's reason where one was given."""
        return "Tool call denied" + (f": {self.message}" if self.message else ".")


class Skipped(ToolError):
    """The call never ran because a user message arrived to steer the run first."""

    kind = "skipped"

    def __init__(self, message: str = "Skipped due to queued user message.") -> None:
        super().__init__(message)


class Interrupted(ToolError):
    """The server stopped mid-call; on recovery the call gets this result instead of a rerun."""

    kind = "interrupted"

    def model_text(self) -> str:
        """Tells the model the server stopped mid-call and the call was not repeated."""
        return self.message or (
            "Interrupted: the server stopped while this tool was running; it was not run again."
        )


IN_DOUBT = "In doubt:"
"""How the result text of a call in doubt begins (what a resumed run looks for)."""


class InDoubt(ToolError):
    """A side-effecting call started and its process died before it reported: whether its
    effect happened is unknown. It is not run again; the model is told not to retry."""

    kind = "in-doubt"

    def model_text(self) -> str:
        """Says the outcome is unknown, that a plain retry may repeat the effect, and what
        the user can do about it."""
        return self.message or (
            f"{IN_DOUBT} this call started but the server stopped before it reported, so "
            "whether it took effect is unknown. Do not call it again just to retry: that may "
            "repeat its effect. Tell the user; they can check the external system (the "
            "call's idempotency key identifies it there) and then ask to retry or not."
        )


def is_in_doubt(text: str) -> bool:
    """Whether a result text is an in-doubt result (``InDoubt``), after an approver's edit
    note if there is one."""
    return split_edit_note(text)[1].startswith(IN_DOUBT)


def idempotency_key(thread_id: str, call_id: str, arguments: Any) -> str:
    """The key a tool passes to the external system it changes (``ctx.idempotency_key``).

    The same for the same call on every retry, recovery, replica and tool worker (it
    depends only on what the thread's history holds: the thread, the call's id and its
    arguments), and different for different arguments (an approver's edit included).
    """
    canonical = json.dumps(
        [thread_id, call_id, arguments], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return "cw-" + hashlib.sha256(canonical.encode()).hexdigest()[:40]


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
        """Add a streamed chunk; nothing is joined or parsed until asked for."""
        self._chunks.append(delta)
        self._text = None

    @property
    def text(self) -> str:
        """The argument JSON so far, joined once and cached until the next chunk."""
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


Remember = Literal["thread"]
"""How long a human's approval lasts beyond its call: ``"thread"``, the rest of the thread."""


@dataclass(slots=True)
class Decision:
    """An answer to an approval request: a human's, keyed by call id when resuming, or a
    policy's (``automatic``), which ``ToolContext.approval`` shows the tool the same way.

    Build one with ``Decision.approve(...)`` or ``Decision.deny(reason)``; the
    constructor (``Decision(approved=True)``) stays for code that uses it.
    """

    approved: bool
    """Whether the call may run; False ends it output-denied."""
    reason: str | None = None
    """Why, in the human's (or the policy's) words; on denial the model sees it."""
    arguments: dict[str, Any] | None = None
    """Edited arguments that replace the model's (only where the tool allows edits)."""
    data: Any = None
    """What the approver sent along for the tool (a chosen account, a note): the tool
    reads it as ``ctx.approval.data``. The model never sees it."""
    remember: Remember | None = None
    """``"thread"``: the human allows this tool for the rest of the thread, so its later
    calls there are approved automatically (only an approval counts, not a denial)."""
    automatic: bool = False
    """Decided without asking anyone now: by a policy, or by a remembered approval."""

    @classmethod
    def approve(
        cls,
        reason: str | None = None,
        *,
        arguments: dict[str, Any] | None = None,
        data: Any = None,
        remember: Remember | None = None,
    ) -> Decision:
        """The call may run (with edited ``arguments``, if the tool allows edits)."""
        return cls(True, reason, arguments=arguments, data=data, remember=remember)

    @classmethod
    def deny(cls, reason: str | None = None) -> Decision:
        """The call does not run; the model sees ``Tool call denied: <reason>``."""
        return cls(False, reason)


# --- the call -----------------------------------------------------------------


@dataclass(slots=True, eq=False)
class Call:
    """One tool call from the model's first argument byte to its one result.

    The model turn, the executor and the Acts hooks all drive this one object;
    ``state`` moves only along ``TRANSITIONS``.
    """

    id: str
    """The id the model (or provider) gave the call: events and results are keyed by it."""
    tool_name: str
    """The name the model called, kept even when no such tool exists."""
    index: int = 0
    """The call's position among its step's calls, in the order the model made them."""
    tool: Tool | None = None
    """The tool that serves the call; None when the name is unknown (a not-found result)."""
    state: CallState = CallState.INPUT_STREAMING
    """Where the call is in its life; change it only through ``transition``."""
    buffer: ArgumentBuffer = field(default_factory=ArgumentBuffer)
    """The argument JSON as it streams in."""
    arguments: dict[str, Any] | None = None
    """The parameters alone (meta split off) once the input is complete; None before."""
    meta: dict[str, Any] = field(default_factory=dict)
    """The ``_`` meta fields (``_outputPath``, ``_instance`` ...): never passed to the tool."""
    validated: Any = None
    """What the executor receives (e.g. a pydantic model's fields), set by validation."""
    deferred: bool = False
    """The arguments hold ``†`` references: they are resolved and validated just before running."""
    approval_id: str | None = None
    """The id of this call's approval request, once one was made."""
    decision: Decision | None = None
    """The human's answer, once the run resumes with one."""
    result: ToolResult | None = None
    """The tool's result when the call ended output-available."""
    error: ToolError | None = None
    """Why the call failed or was denied when it ended output-error or output-denied."""
    message_id: str | None = None
    """The assistant message the call belongs to."""
    proposed: dict[str, Any] | None = None
    """The arguments the model proposed, when an approver edited them: the model's result
    text then says what was proposed and what ran."""

    def transition(self, new: CallState) -> None:
        """Move to ``new``; an edge the state machine lacks is a bug, so it raises."""
        if new not in TRANSITIONS[self.state]:
            raise IllegalTransition(f"call {self.id}: {self.state} -> {new}")
        self.state = new

    @property
    def done(self) -> bool:
        """Whether the call has its one result (a terminal state)."""
        return self.state in TERMINAL

    @property
    def raw_arguments(self) -> dict[str, Any]:
        """Parameters plus meta, as the model wrote them (for history and journals)."""
        if self.arguments is None:
            return dict(self.meta)
        if not self.meta:
            return self.arguments
        return {**self.meta, **self.arguments}

    @property
    def edited(self) -> dict[str, Any] | None:
        """The arguments that run when an approver edited the model's, else None."""
        if self.proposed is None or self.proposed == self.arguments:
            return None
        return self.arguments

    def succeed(self, result: ToolResult) -> None:
        """End the call output-available with the tool's result."""
        self.transition(CallState.OUTPUT_AVAILABLE)
        self.result = result

    def fail(self, error: ToolError) -> None:
        """End the call with an error: output-denied for ``Denied``, output-error otherwise."""
        if isinstance(error, Denied):
            self.transition(CallState.OUTPUT_DENIED)
        else:
            self.transition(CallState.OUTPUT_ERROR)
        self.error = error

    def model_files(self) -> list[FilePart]:
        """The files the model sees with the result (none for a failed call)."""
        return self.result.files if self.error is None and self.result is not None else []

    def model_text(self) -> str:
        """The one result the model sees for this call (after a note on an approver's
        edit, so that the model does not reason about arguments that never ran)."""
        return edit_note(self.proposed, self.arguments) + self._outcome_text()

    def _outcome_text(self) -> str:
        if self.error is not None:
            return self.error.model_text()
        if self.result is not None:
            if self.result.text is not None:
                return self.result.text
            return to_model_text(self.result.content)
        raise IllegalTransition(f"call {self.id} has no result in state {self.state}")


EDIT_NOTE = "[The user edited the arguments before running: proposed "


def edit_note(proposed: dict[str, Any] | None, ran: dict[str, Any] | None) -> str:
    """The note before the result of a call whose arguments an approver edited; empty
    when they were not edited."""
    if proposed is None or ran is None or proposed == ran:
        return ""
    return f"{EDIT_NOTE}{to_model_text(proposed)}, ran {to_model_text(ran)}.] "


def split_edit_note(text: str) -> tuple[dict[str, Any] | None, str]:
    """The arguments a result's edit note says ran (None: no note) and the text after it.

    A call in doubt is reconciled after a restart from its result alone: the note is
    where the arguments that ran (and so the key the call had) are kept.
    """
    if not text.startswith(EDIT_NOTE):
        return None, text
    decoder = json.JSONDecoder()
    try:
        _, end = decoder.raw_decode(text, len(EDIT_NOTE))
        if not text.startswith(", ran ", end):
            return None, text
        ran, end = decoder.raw_decode(text, end + len(", ran "))
    except ValueError:
        return None, text
    if not isinstance(ran, dict) or not text.startswith(".] ", end):
        return None, text
    return ran, text[end + len(".] ") :]
