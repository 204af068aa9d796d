"""What an agent's configuration and a run's result look like: shared by the stages."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic

from pydantic import TypeAdapter
from typing_extensions import TypeVar

from .._errors import CallwrightError
from .._tool_files import MAX_TOOL_FILE_BYTES
from ..call import Call
from ..events import PendingCall, RunError, RunStatus
from ..execute import ExecutionPolicy
from ..messages import Message
from ..models._settings import NO_SETTINGS, ModelSettings
from ..models.base import Mode, Model, ToolChoice
from ..usage import Usage

OutputT = TypeVar("OutputT", default=str)
"""The type of a run's output: ``str`` (the final text) unless ``output_type`` says otherwise."""


@dataclass(slots=True)
class StepInfo:
    """What ``prepare_step`` and stop conditions see about the run so far."""

    step: int
    """The step number, from 1."""
    messages: list[Message]
    """The run's history (read it; do not change it)."""
    last_calls: list[Call] = field(default_factory=list)
    """The calls of the step that just finished."""
    usage: Usage = field(default_factory=Usage)
    """The run's usage so far."""


@dataclass(slots=True)
class StepPlan:
    """What ``prepare_step`` may change for one step."""

    active_tools: Sequence[str] | None = None
    """Offer only these tools in this step (None: all)."""
    tool_choice: ToolChoice | None = None
    """``auto``, ``none``, ``required`` or a tool name to force."""


StopCondition = Callable[[StepInfo], bool]


def step_count_is(n: int) -> StopCondition:
    """Stop after ``n`` steps."""
    return lambda info: info.step >= n


def has_tool_call(name: str) -> StopCondition:
    """Stop after a step in which the model called ``name``."""
    return lambda info: any(c.tool_name == name for c in info.last_calls)


@dataclass(slots=True)
class Limits:
    """Bounds on one run: what a misbehaving model can cost at most."""

    max_steps: int = 20
    """Model calls per run; the last one is offered no tools."""
    max_tokens: int | None = 1_000_000
    """Input plus output tokens over the run (delegates included)."""
    max_duration: float | None = 600.0
    """Seconds of wall time before the run stops: at the next step, or in the middle of
    a model's reply (the reply so far is kept; calls it was making are not run)."""
    max_identical_calls: int = 3
    """Consecutive identical calls before a nudge; the second time, the run stops."""
    tool_timeout: float | None = 300.0
    """Seconds, for tools that set no timeout of their own."""
    max_argument_bytes: int = 1_000_000
    """Size of one call's argument JSON."""
    max_json_depth: int = 32
    """Nesting of one call's arguments."""
    max_reply_chars: int = 4_000_000
    """Characters in one model reply (text, reasoning and call arguments together),
    counted as it streams: past it the stream is stopped and the run ends with the
    error ``reply_too_large``, so a runaway model cannot fill the server's memory."""
    max_tool_file_bytes: int = MAX_TOOL_FILE_BYTES
    """Bytes (decoded) the files of one tool result may hold together (images, audio,
    documents a tool returns): they are journaled with the result and sent to the model
    on every later step. More is an error result the model sees."""


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """How a run's structured output is checked (no schema: the output is the final text)."""

    schema: dict[str, Any] | None = None
    """The JSON schema the model is shown."""
    adapter: TypeAdapter[Any] | None = None
    """Validates the model's output into the user's type; None for a raw schema."""


@dataclass(frozen=True, slots=True)
class RunSettings:
    """An agent's configuration as one run reads it: fixed for the run's life."""

    model: Model
    """Streams each model turn."""
    mode: Mode
    """native tool calling, or the structured solution schema."""
    instructions: str | None
    """The system prompt."""
    output: OutputSpec
    """What the run's output must be."""
    limits: Limits
    """Bounds on steps, tokens, time, argument size."""
    execution: ExecutionPolicy
    """How calls are carried out (strategy, timeouts, approval ids)."""
    stop_when: tuple[StopCondition, ...] = ()
    """Checked after each step with calls; any true ends the run."""
    prepare_step: Callable[[StepInfo], StepPlan | None] | None = None
    """Called before each model turn to narrow the tools or force a choice."""
    on_step_finish: Callable[[StepInfo], None] | None = None
    """Called after each step."""
    max_delegate_depth: int = 3
    """How deep delegates may nest."""
    model_settings: ModelSettings = NO_SETTINGS
    """The agent's model settings with the run's over them; sent with every step."""


@dataclass(slots=True)
class RunResult(Generic[OutputT]):
    """How a run ended, and everything needed to continue the conversation."""

    status: RunStatus
    """completed, paused (waiting for approvals or client tools), stopped, cancelled, error."""
    output: OutputT | None
    """The final text or structured output (None unless completed or stopped)."""
    messages: list[Message]
    """The whole history: pass it to the next run (or dump it with ``MessageHistory``)."""
    new_messages: list[Message]
    """The messages this run added."""
    usage: Usage
    """Tokens and requests, delegates included."""
    pending: list[PendingCall]
    """The calls a paused run waits on."""
    state: dict[str, Any]
    """The run's shared state document as it ended."""
    run_id: str
    """This run's id (a resumed run has a new one)."""
    thread_id: str
    """The conversation's id: pass it to the next run of the same conversation."""
    reason: str | None = None
    """Why a run stopped early (a limit, a loop)."""
    error: RunError | None = None
    """What ended a run with status ``error``."""


class RunFailed(CallwrightError):
    """A run ended with status ``error`` (the model or its provider failed, a toolset could
    not be listed, a missing API key): ``Agent.run`` and ``run_sync`` raise it, as other
    agent libraries raise on a failed run, rather than return a result to check.

    It carries what the run got to: ``result`` (status ``error``), with the history so far
    in ``messages`` and the ``usage`` spent. A paused, stopped or completed run is no
    failure: ``run`` returns it.
    """

    def __init__(self, result: RunResult[Any]) -> None:
        error = result.error or RunError("the run failed")
        super().__init__(f"the run failed ({error.code}): {error.message}")
        self.error = error
        """What ended the run: the ``RunError`` event's ``message`` and ``code``."""
        self.result = result
        """The run's result, status ``error``."""
        self.messages = result.messages
        """The history up to the failure (pass it to a new run to try again)."""
        self.usage = result.usage
        """Tokens and requests spent before the failure."""


def new_id(prefix: str) -> str:
    """A server-made id: a prefix and 128 random bits."""
    return f"{prefix}_{uuid.uuid4().hex}"
