"""callwright: the whole life of an AI agent's tool call.

Define tools as typed functions or JSON-Schema blueprints, run them from an
agent loop with approvals, cancellation, progress and streamed outputs, and
stream every step to AG-UI or AI SDK front ends.
"""

from .call import (
    Call,
    CallState,
    Cancelled,
    Decision,
    Denied,
    IllegalTransition,
    Interrupted,
    InvalidArgs,
    Skipped,
    TimedOut,
    ToolError,
    ToolNotFound,
    ToolResult,
)
from .compose import native_tools, solution_schema
from .context import CancelToken, ToolContext
from .events import Event, PendingCall
from .execute import PARALLEL, SEQUENTIAL, Strategy, batched
from .messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
from .models import (
    AnthropicModel,
    LocalModel,
    Model,
    ModelRequest,
    OpenAIModel,
    ScriptedModel,
    Usage,
)
from .run import (
    Agent,
    Limits,
    Run,
    RunResult,
    StepInfo,
    StepPlan,
    has_tool_call,
    step_count_is,
)
from .state import RunState
from .tool import Tool, tool
from .toolbox import Toolbox, ToolConflict
from .wire import AGUIEncoder, AISDKEncoder, ApprovalLedger, MemoryApprovalLedger, WireError

__all__ = [
    "PARALLEL",
    "SEQUENTIAL",
    "AGUIEncoder",
    "AISDKEncoder",
    "Agent",
    "AnthropicModel",
    "ApprovalLedger",
    "AssistantMessage",
    "Call",
    "CallState",
    "CancelToken",
    "Cancelled",
    "Decision",
    "Denied",
    "Event",
    "IllegalTransition",
    "Interrupted",
    "InvalidArgs",
    "Limits",
    "LocalModel",
    "MemoryApprovalLedger",
    "Message",
    "Model",
    "ModelRequest",
    "OpenAIModel",
    "PendingCall",
    "Run",
    "RunResult",
    "RunState",
    "ScriptedModel",
    "Skipped",
    "StepInfo",
    "StepPlan",
    "Strategy",
    "SystemMessage",
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
    "Usage",
    "UserMessage",
    "WireError",
    "batched",
    "create_app",
    "has_tool_call",
    "native_tools",
    "solution_schema",
    "step_count_is",
    "tool",
]


def __getattr__(name: str) -> object:
    """``create_app`` needs the ``server`` extra (Starlette): imported on first use."""
    if name == "create_app":
        from .server import create_app

        return create_app
    raise AttributeError(f"module 'callwright' has no attribute {name!r}")
