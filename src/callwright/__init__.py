"""callwright: the whole life of an AI agent's tool call.

Define tools as typed functions or JSON-Schema blueprints, run them from an
agent loop with approvals, cancellation, progress and streamed outputs, and
stream every step to AG-UI or AI SDK front ends.

The top level holds what a user of the loop needs. The rest lives in its
subpackage: model adapters in ``callwright.models``, the wire encoders in
``callwright.wire``, the server in ``callwright.server``, the journal in
``callwright.store``, the canonical events in ``callwright.events``.
"""

from . import events
from ._errors import (
    CallwrightDeprecationWarning,
    CallwrightError,
    ConfigurationError,
    MissingAPIKey,
)
from ._journaled import begin_journaled, start_journaled
from ._run_start import RunStart
from ._strategy import PARALLEL, SEQUENTIAL, Strategy, batched
from ._tool_files import MAX_TOOL_FILE_BYTES, File
from .approvals import AgentApprovalPolicy, ApprovalQuery, ThreadApprovals
from .call import (
    Call,
    CallState,
    Cancelled,
    Decision,
    Denied,
    IllegalTransition,
    InDoubt,
    Interrupted,
    InvalidArgs,
    Skipped,
    TimedOut,
    ToolError,
    ToolNotFound,
    ToolResult,
)
from .context import CancelToken, RunScope, ToolContext
from .elicitation import InputAnswer, InputRequest, InputRequired
from .events import Event, PendingCall
from .messages import (
    AssistantMessage,
    FilePart,
    Message,
    MessageHistory,
    SystemMessage,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
from .models import Model, ModelSettings
from .run import (
    Agent,
    Limits,
    Run,
    RunAlreadyStarted,
    RunFailed,
    RunResult,
    StepInfo,
    StepPlan,
    StopCondition,
    UnknownDecision,
    has_tool_call,
    step_count_is,
)
from .tool import ApprovalVerdict, Tool, tool
from .toolbox import Toolbox, ToolConflict, Toolset, ToolsetUnavailable
from .usage import Usage

__version__ = "0.2.0"

__all__ = [
    "MAX_TOOL_FILE_BYTES",
    "PARALLEL",
    "SEQUENTIAL",
    "Agent",
    "AgentApprovalPolicy",
    "ApprovalQuery",
    "ApprovalVerdict",
    "AssistantMessage",
    "Call",
    "CallState",
    "CallwrightDeprecationWarning",
    "CallwrightError",
    "CancelToken",
    "Cancelled",
    "ConfigurationError",
    "Decision",
    "Denied",
    "Event",
    "File",
    "FilePart",
    "IllegalTransition",
    "InDoubt",
    "InputAnswer",
    "InputRequest",
    "InputRequired",
    "Interrupted",
    "InvalidArgs",
    "Limits",
    "Message",
    "MessageHistory",
    "MissingAPIKey",
    "Model",
    "ModelSettings",
    "PendingCall",
    "Run",
    "RunAlreadyStarted",
    "RunFailed",
    "RunResult",
    "RunScope",
    "RunStart",
    "Skipped",
    "StepInfo",
    "StepPlan",
    "StopCondition",
    "Strategy",
    "SystemMessage",
    "ThreadApprovals",
    "TimedOut",
    "Tool",
    "ToolCallPart",
    "ToolConflict",
    "ToolContext",
    "ToolError",
    "ToolNotFound",
    "ToolResult",
    "ToolResultMessage",
    "Toolbox",
    "Toolset",
    "ToolsetUnavailable",
    "UnknownDecision",
    "Usage",
    "UserMessage",
    "batched",
    "begin_journaled",
    "events",
    "has_tool_call",
    "start_journaled",
    "step_count_is",
    "tool",
]
