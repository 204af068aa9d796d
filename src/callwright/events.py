"""The canonical events of a run. Everything upstream emits these; the AG-UI and
AI SDK encoders (``callwright.wire``) translate them, and nothing here knows a
wire format.

Each event class carries a ``type`` string so encoders dispatch with one dict
lookup instead of an isinstance chain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

from .elicitation import InputRequest
from .messages import AssistantMessage, FilePart, Message
from .usage import Usage

RunStatus = Literal["completed", "paused", "cancelled", "stopped", "error"]
ResultState = Literal["output-available", "output-error", "output-denied"]


@dataclass(slots=True)
class PendingCall:
    """A call the run is waiting on: a human's approval or answer, or a front end's result."""

    call_id: str
    """The call's id: the key a client answers with when it resumes the run."""
    tool_name: str
    """The tool the model called."""
    arguments: dict[str, Any]
    """The arguments as the model wrote them, meta fields included: what a human reviews."""
    kind: Literal["approval", "client", "input"]
    """``approval``: a human must approve; ``client``: a front end must run the tool;
    ``input``: the running tool asked a human a question (``request``)."""
    approval_id: str | None = None
    """The id an approval answer must carry (approvals only)."""
    reason_for_call: str | None = None
    """The model's ``_reasoningForCall``, shown to the human beside the request."""
    edit_schema: dict[str, Any] | None = None
    """The tool's parameter schema when a human may edit the arguments before approving."""
    request: InputRequest | None = None
    """The question a running call asked (``input`` only): answer it with an ``InputAnswer``."""
    traceparent: str | None = None
    """The paused run segment's span (W3C ``traceparent``) when tracing is on: pass it as
    ``Agent.start(traceparent=...)`` to link the resumed segment to it from another process."""


@dataclass(slots=True)
class RunStarted:
    """Emitted first, once per run, before anything else happens."""

    type: ClassVar[str] = "run-started"
    run_id: str
    """The run's id: a front end attributes what follows to it."""
    thread_id: str
    """The conversation the run belongs to, stable across its runs."""


@dataclass(slots=True)
class RunFinished:
    """Emitted last when a run ends without an error (a failed run ends with ``RunError``)."""

    type: ClassVar[str] = "run-finished"
    run_id: str
    """The run that ended."""
    thread_id: str
    """The conversation the run belongs to."""
    status: RunStatus
    """Why it ended: ``paused`` means ``pending`` lists calls awaiting an answer."""
    output: Any = None
    """The run's final output (text or the structured output); None unless completed or stopped."""
    pending: list[PendingCall] = field(default_factory=list)
    """The calls a front end must answer (approve, or run) before the run can resume."""
    usage: Usage = field(default_factory=Usage)
    """What the whole run cost, for display or billing."""
    reason: str | None = None
    """Why a run stopped early (a limit, a loop), for the user to read."""


@dataclass(slots=True)
class RunError:
    """Emitted last, instead of ``RunFinished``, when the model or callwright failed."""

    type: ClassVar[str] = "run-error"
    message: str
    """A readable description of the failure, shown to the user."""
    code: str = "run_error"
    """A stable machine-readable code a front end can branch on."""


@dataclass(slots=True)
class StepStarted:
    """Emitted when a step begins: one model turn and the calls it makes."""

    type: ClassVar[str] = "step-started"
    step: int
    """The step's number in the run, from 1."""
    message_id: str
    """The id of the assistant message this step's text and calls belong to."""


@dataclass(slots=True)
class StepFinished:
    """Emitted when a step's model turn and all of its calls are done."""

    type: ClassVar[str] = "step-finished"
    step: int
    """The step's number in the run, from 1."""
    message_id: str
    """The assistant message of this step."""
    finish_reason: str
    """Why the model stopped (``stop``, ``tool-calls``, ``length``, ``error`` ...)."""
    usage: Usage
    """What this step's model turn cost."""


@dataclass(slots=True)
class HistoryChanged:
    """Emitted when the run's history grows (a model reply, a step's tool results) or, as a
    paused run resumes, its open calls' results are sorted in after their call.

    Encoders ignore it. A journal stores the messages it carries, so it never reads the
    live run and each step's work is proportional to what the step added.
    """

    type: ClassVar[str] = "history-changed"
    start: int
    """Where in the history ``messages`` begin (earlier messages are unchanged)."""
    messages: list[Message]
    """The history from ``start`` on, as it is now."""


@dataclass(slots=True)
class ModelResponse:
    """The model's complete reply for a step, before any of its calls run.

    Encoders ignore it; a journal records it as the step's model operation.
    """

    type: ClassVar[str] = "model-response"
    step: int
    """The step the reply belongs to."""
    message: AssistantMessage
    """The reply as it enters the history: text, reasoning and tool calls."""


@dataclass(slots=True)
class TextStart:
    """Emitted when the model begins a segment of visible text."""

    type: ClassVar[str] = "text-start"
    message_id: str
    """The assistant message the segment belongs to."""
    id: str
    """The segment's id: the deltas and the end that follow carry it."""


@dataclass(slots=True)
class TextDelta:
    """Emitted for each chunk of text the model streams."""

    type: ClassVar[str] = "text-delta"
    id: str
    """The text segment the chunk extends."""
    delta: str
    """The new text, appended by the front end to what it shows."""


@dataclass(slots=True)
class TextEnd:
    """Emitted when a text segment is complete (a call or reasoning follows, or the turn ends)."""

    type: ClassVar[str] = "text-end"
    id: str
    """The segment that ended."""


@dataclass(slots=True)
class ReasoningStart:
    """Emitted when the model begins a segment of reasoning."""

    type: ClassVar[str] = "reasoning-start"
    message_id: str
    """The assistant message the reasoning belongs to."""
    id: str
    """The segment's id: the deltas and the end that follow carry it."""


@dataclass(slots=True)
class ReasoningDelta:
    """Emitted for each chunk of reasoning the model streams."""

    type: ClassVar[str] = "reasoning-delta"
    id: str
    """The reasoning segment the chunk extends."""
    delta: str
    """The new reasoning text."""


@dataclass(slots=True)
class ReasoningEnd:
    """Emitted when a reasoning segment is complete."""

    type: ClassVar[str] = "reasoning-end"
    id: str
    """The segment that ended."""


@dataclass(slots=True)
class ToolCallStart:
    """Emitted when the model begins a call (input-streaming): its arguments follow."""

    type: ClassVar[str] = "tool-call-start"
    call_id: str
    """The call's id: every later event of the call carries it."""
    tool_name: str
    """The tool the model called (possibly unknown: a not-found result follows)."""
    message_id: str
    """The assistant message the call belongs to."""
    title: str | None = None
    """The tool's human-readable title, for the front end to show instead of the name."""
    client: bool = False
    """True when a front end runs this tool: the call's result will come from the client."""


@dataclass(slots=True)
class ToolCallArgs:
    """Emitted for each chunk of argument JSON the model streams."""

    type: ClassVar[str] = "tool-call-args"
    call_id: str
    """The call the chunk belongs to."""
    delta: str
    """Raw JSON text; a front end may parse the partial arguments for a live preview."""


@dataclass(slots=True)
class ToolCallEnd:
    """Emitted when a call's arguments are complete and valid (input-available)."""

    type: ClassVar[str] = "tool-call-end"
    call_id: str
    """The call whose input is complete."""
    tool_name: str
    """The tool the model called."""
    arguments: dict[str, Any]
    """The parsed arguments, meta fields included."""
    client: bool = False
    """True when a front end runs this tool: it can execute the call now."""


@dataclass(slots=True)
class ToolInputError:
    """Emitted instead of ``ToolCallEnd`` when the arguments are malformed or invalid.

    The call's error result follows. An unknown tool is not an input error: its
    call ends input-available and gets a not-found result.
    """

    type: ClassVar[str] = "tool-input-error"
    call_id: str
    """The call that failed."""
    tool_name: str
    """The tool the model named."""
    input: Any
    """As much of the arguments as could be parsed (None when nothing could)."""
    error: str
    """What was wrong, as the model will see it."""


@dataclass(slots=True)
class ApprovalRequested:
    """Emitted when a call needs a human's approval before it runs; the run then pauses."""

    type: ClassVar[str] = "approval-requested"
    call_id: str
    """The call waiting for approval."""
    approval_id: str
    """The id the human's answer must carry (distinct from the call id)."""
    tool_name: str
    """The tool the call would run."""
    arguments: dict[str, Any]
    """The arguments the human is asked to approve."""
    reason_for_call: str | None = None
    """The model's stated reason for the call, shown beside the request."""


@dataclass(slots=True)
class ApprovalResolved:
    """Emitted when a resumed run applies the human's answer to a call, or when a policy
    (or a tool allowed for the rest of the thread) decides a call without asking anyone
    (``automatic``: no ``ApprovalRequested`` came before it)."""

    type: ClassVar[str] = "approval-resolved"
    call_id: str
    """The call that was waiting."""
    approval_id: str | None
    """The approval that was answered."""
    approved: bool
    """Whether the call may run; a denied call ends output-denied."""
    reason: str | None = None
    """The human's (or the policy's) reason, passed on to the model on denial."""
    automatic: bool = False
    """Decided by a policy or a remembered approval, not by a human's answer now."""


@dataclass(slots=True)
class InputRequested:
    """Emitted when a running call asks a human for input (MCP elicitation); the run then
    pauses with the call pending until an ``InputAnswer`` resumes it."""

    type: ClassVar[str] = "input-requested"
    call_id: str
    """The call that asked."""
    tool_name: str
    """The tool being run."""
    arguments: dict[str, Any]
    """The call's arguments (what the answer is checked against when it comes back)."""
    request: InputRequest
    """The question: its id, message and the JSON Schema of the answer (its ``state`` is
    the tool's and is never sent to a client)."""


@dataclass(slots=True)
class ToolExecutionStart:
    """Emitted when a call's tool actually starts running (after gating and approval)."""

    type: ClassVar[str] = "tool-execution-start"
    call_id: str
    """The call now running: a front end can show it as busy."""
    tool_name: str
    """The tool being run."""
    edited: dict[str, Any] | None = None
    """The arguments it runs with when an approver edited the model's (None: the
    model's): a journal keeps them, so a call left in doubt is reconciled with the key
    it ran with."""


@dataclass(slots=True)
class ToolHandleSaved:
    """Emitted when a running tool saves how to find its work again (``ctx.save_handle``:
    an MCP server's task id). Encoders ignore it; a journal keeps it with the call's
    operation, so that a run recovered after a restart re-attaches instead of doubting."""

    type: ClassVar[str] = "tool-handle-saved"
    call_id: str
    """The call that saved it."""
    tool_name: str
    """The tool that saved it."""
    handle: Any
    """What the tool saved (JSON)."""


@dataclass(slots=True)
class ToolProgress:
    """Emitted when a running tool reports progress (``ctx.progress``): UI only."""

    type: ClassVar[str] = "tool-progress"
    call_id: str
    """The call that reported."""
    tool_name: str
    """The tool being run."""
    text: str
    """The status line to show."""
    fraction: float | None = None
    """How far along, from 0 to 1, for a progress bar; None when the tool cannot tell."""


@dataclass(slots=True)
class ToolPartialOutput:
    """A preliminary output (a generator's yield, ``ctx.update``): UI only."""

    type: ClassVar[str] = "tool-partial-output"
    call_id: str
    """The call that produced it."""
    tool_name: str
    """The tool being run."""
    output: Any
    """The output so far: it replaces the previous one on screen."""


@dataclass(slots=True)
class ToolCallResult:
    """Emitted once per call with its one result; ``state`` says how the call ended."""

    type: ClassVar[str] = "tool-call-result"
    call_id: str
    """The call that finished."""
    tool_name: str
    """The tool that was called."""
    state: ResultState
    """How the call ended; a front end renders the matching tool-part state."""
    output: Any = None
    """The tool's value, for UIs (output-available only)."""
    content: str = ""
    """The text the model sees for this call, whatever the state."""
    details: Any = None
    """Extra data for UIs and logs that the model never sees (``ToolResult.details``)."""
    error: str | None = None
    """The error text (output-error and output-denied)."""
    error_kind: str | None = None
    """The failure's kind (``failed``, ``timed-out``, ``denied`` ...), for UIs to style it."""
    artifact: dict[str, Any] | None = None
    """Where a result too large for the model was stored (id, ``url``, size, lines,
    media type): UIs offer its download; the output holds its preview."""
    files: list[FilePart] = field(default_factory=list)
    """Images, audio and documents the tool returned (output-available only): UIs show
    them beside the output, the model gets them with ``content``."""


@dataclass(slots=True)
class StateSnapshot:
    """Emitted at the start of a run given a state: the whole shared state document."""

    type: ClassVar[str] = "state-snapshot"
    state: Any
    """The state document; a front end replaces its copy with it."""


@dataclass(slots=True)
class StateDelta:
    """Emitted when a call's result changes the shared state (``_outputPath``, a data message)."""

    type: ClassVar[str] = "state-delta"
    patch: list[dict[str, Any]]
    """RFC 6902 operations; a front end applies them to its copy in order."""


@dataclass(slots=True)
class Subagent:
    """An event of a delegate's sub-run, forwarded while the parent call runs.

    The sub-run's own RunStarted / RunFinished / RunError mark its start and end.
    """

    type: ClassVar[str] = "subagent"
    call_id: str
    """The parent's call that delegated: the sub-run's activity is shown under it."""
    tool_name: str
    """The delegating tool."""
    run_id: str
    """The sub-run's id."""
    name: str
    """The delegate's name, for display."""
    event: Any
    """The sub-run's event (possibly another ``Subagent`` for deeper delegation)."""


@dataclass(slots=True)
class Custom:
    """An application event passed through to clients."""

    type: ClassVar[str] = "custom"
    name: str
    """The application's name for the event: clients dispatch on it."""
    value: Any
    """The payload, JSON-serialisable."""


Event: TypeAlias = (
    RunStarted
    | RunFinished
    | RunError
    | StepStarted
    | StepFinished
    | ModelResponse
    | HistoryChanged
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
    | InputRequested
    | ToolExecutionStart
    | ToolHandleSaved
    | ToolProgress
    | ToolPartialOutput
    | ToolCallResult
    | StateSnapshot
    | StateDelta
    | Subagent
    | Custom
)
"""Any canonical event: what ``Run.events()`` yields and the wire encoders accept."""
