"""The canonical events of a run. Everything upstream emits these; the AG-UI and
AI SDK encoders (``callwright.wire``) translate them, and nothing here knows a
wire format.

Each event class carries a ``type`` string so encoders dispatch with one dict
lookup instead of an isinstance chain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

from .messages import AssistantMessage
from .usage import Usage

RunStatus = Literal["completed", "paused", "cancelled", "stopped", "error"]
ResultState = Literal["output-available", "output-error", "output-denied"]


@dataclass(slots=True)
class PendingCall:
    """A call the run is waiting on: a human's approval or a front end's result."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    kind: Literal["approval", "client"]
    approval_id: str | None = None
    reason_for_call: str | None = None
    edit_schema: dict[str, Any] | None = None
    """The tool's parameter schema when a human may edit the arguments before approving."""


@dataclass(slots=True)
class RunStarted:
    type: ClassVar[str] = "run-started"
    run_id: str
    thread_id: str


@dataclass(slots=True)
class RunFinished:
    type: ClassVar[str] = "run-finished"
    run_id: str
    thread_id: str
    status: RunStatus
    output: Any = None
    pending: list[PendingCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    reason: str | None = None  # why a run stopped early (a limit, a loop)


@dataclass(slots=True)
class RunError:
    type: ClassVar[str] = "run-error"
    message: str
    code: str = "run_error"


@dataclass(slots=True)
class StepStarted:
    type: ClassVar[str] = "step-started"
    step: int
    message_id: str


@dataclass(slots=True)
class StepFinished:
    type: ClassVar[str] = "step-finished"
    step: int
    message_id: str
    finish_reason: str
    usage: Usage


@dataclass(slots=True)
class ModelResponse:
    """The model's complete reply for a step, before any of its calls run.

    Encoders ignore it; a journal records it as the step's model operation.
    """

    type: ClassVar[str] = "model-response"
    step: int
    message: AssistantMessage


@dataclass(slots=True)
class TextStart:
    type: ClassVar[str] = "text-start"
    message_id: str
    id: str


@dataclass(slots=True)
class TextDelta:
    type: ClassVar[str] = "text-delta"
    id: str
    delta: str


@dataclass(slots=True)
class TextEnd:
    type: ClassVar[str] = "text-end"
    id: str


@dataclass(slots=True)
class ReasoningStart:
    type: ClassVar[str] = "reasoning-start"
    message_id: str
    id: str


@dataclass(slots=True)
class ReasoningDelta:
    type: ClassVar[str] = "reasoning-delta"
    id: str
    delta: str


@dataclass(slots=True)
class ReasoningEnd:
    type: ClassVar[str] = "reasoning-end"
    id: str


@dataclass(slots=True)
class ToolCallStart:
    """input-streaming: the model began a call."""

    type: ClassVar[str] = "tool-call-start"
    call_id: str
    tool_name: str
    message_id: str
    title: str | None = None
    client: bool = False


@dataclass(slots=True)
class ToolCallArgs:
    type: ClassVar[str] = "tool-call-args"
    call_id: str
    delta: str


@dataclass(slots=True)
class ToolCallEnd:
    """input-available: the arguments are complete and valid."""

    type: ClassVar[str] = "tool-call-end"
    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    client: bool = False


@dataclass(slots=True)
class ToolInputError:
    """The arguments are complete but malformed or invalid, or the tool is unknown."""

    type: ClassVar[str] = "tool-input-error"
    call_id: str
    tool_name: str
    input: Any
    error: str


@dataclass(slots=True)
class ApprovalRequested:
    type: ClassVar[str] = "approval-requested"
    call_id: str
    approval_id: str
    tool_name: str
    arguments: dict[str, Any]
    reason_for_call: str | None = None


@dataclass(slots=True)
class ApprovalResolved:
    type: ClassVar[str] = "approval-resolved"
    call_id: str
    approval_id: str | None
    approved: bool
    reason: str | None = None


@dataclass(slots=True)
class ToolExecutionStart:
    type: ClassVar[str] = "tool-execution-start"
    call_id: str
    tool_name: str


@dataclass(slots=True)
class ToolProgress:
    type: ClassVar[str] = "tool-progress"
    call_id: str
    tool_name: str
    text: str
    fraction: float | None = None


@dataclass(slots=True)
class ToolPartialOutput:
    """A preliminary output (a generator's yield, ``ctx.update``): UI only."""

    type: ClassVar[str] = "tool-partial-output"
    call_id: str
    tool_name: str
    output: Any


@dataclass(slots=True)
class ToolCallResult:
    """The call's one result: output-available, output-error or output-denied."""

    type: ClassVar[str] = "tool-call-result"
    call_id: str
    tool_name: str
    state: ResultState
    output: Any = None  # the value for UIs (output-available)
    content: str = ""  # the text the model sees
    details: Any = None
    error: str | None = None  # the error text (output-error / output-denied)
    error_kind: str | None = None


@dataclass(slots=True)
class StateSnapshot:
    type: ClassVar[str] = "state-snapshot"
    state: Any


@dataclass(slots=True)
class StateDelta:
    type: ClassVar[str] = "state-delta"
    patch: list[dict[str, Any]]


@dataclass(slots=True)
class Subagent:
    """An event of a delegate's sub-run, forwarded while the parent call runs.

    The sub-run's own RunStarted / RunFinished / RunError mark its start and end.
    """

    type: ClassVar[str] = "subagent"
    call_id: str  # the parent's call that delegated
    tool_name: str
    run_id: str  # the sub-run
    name: str  # the delegate's name
    event: Any


@dataclass(slots=True)
class Custom:
    """An application event passed through to clients."""

    type: ClassVar[str] = "custom"
    name: str
    value: Any


Event: TypeAlias = (
    RunStarted
    | RunFinished
    | RunError
    | StepStarted
    | StepFinished
    | ModelResponse
    | TextStart
    | TextDelta
    | TextEnd
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | ToolCallStart
    | ToolCallArgs
    | ToolCallEnd
    | ToolInputError
    | ApprovalRequested
    | ApprovalResolved
    | ToolExecutionStart
    | ToolProgress
    | ToolPartialOutput
    | ToolCallResult
    | StateSnapshot
    | StateDelta
    | Subagent
    | Custom
)
