"""Canonical events as AG-UI SSE frames: the encoding stage of ``agui``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from .._tool_files import with_labels
from ..events import (
    Custom,
    PendingCall,
    ReasoningEnd,
    ReasoningStart,
    RunError,
    RunFinished,
    RunStarted,
    StateDelta,
    StateSnapshot,
    StepFinished,
    StepStarted,
    Subagent,
    TextEnd,
    TextStart,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
    ToolInputError,
    ToolPartialOutput,
    ToolProgress,
)
from ..usage import Usage
from ._agui_versions import has_content_parts
from ._base import DeltaFrame, Payload, Payloads, SSEEncoder, on
from ._tool_files import agui_part

ACTIVITY_TYPE = "tool-activity"
INTERRUPT_REASON = "tool_call"
INPUT_REASON = "input_required"


class AGUIEncoder(SSEEncoder):
    """Encodes one run's canonical events as AG-UI SSE frames (``bytes``; ``b""`` = nothing).

    One instance per run: it remembers the open tool activities.
    """

    text_delta = DeltaFrame("TEXT_MESSAGE_CONTENT", "messageId")
    reasoning_delta = DeltaFrame("REASONING_MESSAGE_CONTENT", "messageId")
    args_delta = DeltaFrame("TOOL_CALL_ARGS", "toolCallId")
    skip_empty_deltas = True
    closers: ClassVar[Mapping[str, tuple[str, str | None]]] = {
        "STEP_STARTED": ("STEP_FINISHED", "stepName"),
        "TEXT_MESSAGE_START": ("TEXT_MESSAGE_END", "messageId"),
        "REASONING_START": ("REASONING_END", "messageId"),
        "REASONING_MESSAGE_START": ("REASONING_MESSAGE_END", "messageId"),
        "TOOL_CALL_START": ("TOOL_CALL_END", "toolCallId"),
        "SUBAGENT_STARTED": ("SUBAGENT_ERROR", "subagentRunId"),
    }
    other_ends: ClassVar[Mapping[str, str]] = {"SUBAGENT_FINISHED": "SUBAGENT_ERROR"}
    close_fields: ClassVar[Mapping[str, Payload]] = {
        "SUBAGENT_ERROR": {
            "message": "the sub-agent stopped: the process running it died",
            "code": "interrupted",
        }
    }

    def __init__(
        self,
        *,
        protocol_1: bool = True,
        protocol_version: str | None = None,
        strip_paths: bool = False,
    ) -> None:
        super().__init__(strip_paths=strip_paths)
        self.protocol_1 = protocol_1 or protocol_version is not None
        self.protocol_version = protocol_version
        """The version declared on ``RUN_STARTED`` (``protocol_version(body)``); None: none."""
        self.usage = Usage()
        """The usage of the steps finished so far (for ``RUN_ERROR``)."""
        self.steps_before = 0
        """Steps of the stream this one continues (``continue_after``): its step names
        go on from there rather than start again at ``step-1``."""

    def _continues(self, payload: Payload) -> None:
        if payload["type"] != "STEP_STARTED" or "subagentRunId" in payload:
            return
        name = payload.get("stepName")
        number = name.removeprefix("step-") if isinstance(name, str) else ""
        if number.isdecimal():
            self.steps_before = max(self.steps_before, int(number))

    # run and steps

    @on(RunStarted)
    def _run_started(self, e: RunStarted) -> Payloads:
        payload: Payload = {"type": "RUN_STARTED", "threadId": e.thread_id, "runId": e.run_id}
        if self.protocol_version is not None:
            payload["protocolVersion"] = self.protocol_version
        return payload

    @on(RunFinished)
    def _run_finished(self, e: RunFinished) -> Payloads:
        payload: Payload = {"type": "RUN_FINISHED", "threadId": e.thread_id, "runId": e.run_id}
        if e.output is not None and e.status != "paused":
            payload["result"] = e.output
        outcome = self._outcome(e)
        if outcome is not None:
            payload["outcome"] = outcome
        if e.usage.requests:
            payload["usage"] = [_token_usage(e.usage)]
        return payload

    def _outcome(self, e: RunFinished) -> Payload | None:
        approvals = [p for p in e.pending if p.kind == "approval" and p.approval_id]
        questions = [_question(p) for p in e.pending if p.kind == "input" and p.request]
        if approvals or questions:
            interrupts = [_interrupt(p) for p in approvals] + questions
            return {"type": "interrupt", "interrupts": interrupts}
        if not self.protocol_1:
            return None
        if e.status == "cancelled":
            return {"type": "cancelled"}
        outcome: Payload = {"type": "success"}
        pending = [p.call_id for p in e.pending if p.kind == "client"]
        if pending:
            outcome["pendingToolCallIds"] = pending
        return outcome

    @on(RunError)
    def _run_error(self, e: RunError) -> Payloads:
        """With the usage of the model turns finished before the failure, as AG-UI 1.1
        defines it (a run that failed before any has none)."""
        payload: Payload = {
            "type": "RUN_ERROR",
            "message": self.error_text(e.message),
            "code": e.code,
        }
        if self.usage.requests:
            payload["usage"] = [_token_usage(self.usage)]
        return payload

    @on(StepStarted)
    def _step_started(self, e: StepStarted) -> Payloads:
        return {"type": "STEP_STARTED", "stepName": f"step-{e.step + self.steps_before}"}

    @on(StepFinished)
    def _step_finished(self, e: StepFinished) -> Payloads:
        self.usage.add(e.usage)
        return {"type": "STEP_FINISHED", "stepName": f"step-{e.step + self.steps_before}"}

    # text and reasoning (the deltas are the base's fast path)

    @on(TextStart)
    def _text_start(self, e: TextStart) -> Payloads:
        return {"type": "TEXT_MESSAGE_START", "messageId": e.id, "role": "assistant"}

    @on(TextEnd)
    def _text_end(self, e: TextEnd) -> Payloads:
        return {"type": "TEXT_MESSAGE_END", "messageId": e.id}

    @on(ReasoningStart)
    def _reasoning_start(self, e: ReasoningStart) -> Payloads:
        return [
            {"type": "REASONING_START", "messageId": e.id},
            {"type": "REASONING_MESSAGE_START", "messageId": e.id, "role": "reasoning"},
        ]

    @on(ReasoningEnd)
    def _reasoning_end(self, e: ReasoningEnd) -> Payloads:
        return [
            {"type": "REASONING_MESSAGE_END", "messageId": e.id},
            {"type": "REASONING_END", "messageId": e.id},
        ]

    # tool calls

    @on(ToolCallStart)
    def _tool_start(self, e: ToolCallStart) -> Payloads:
        return {
            "type": "TOOL_CALL_START",
            "toolCallId": e.call_id,
            "toolCallName": e.tool_name,
            "parentMessageId": e.message_id,
        }

    @on(ToolCallEnd, ToolInputError)
    def _tool_end(self, e: ToolCallEnd | ToolInputError) -> Payloads:
        # After an input error the call is closed here too; its error result follows
        # as TOOL_CALL_RESULT.
        return {"type": "TOOL_CALL_END", "toolCallId": e.call_id}

    @on(ToolCallResult)
    def _tool_result(self, e: ToolCallResult) -> Payloads:
        result: Payload = {
            "type": "TOOL_CALL_RESULT",
            "messageId": f"result-{e.call_id}",
            "toolCallId": e.call_id,
            "content": self._content(e),
            "role": "tool",
        }
        info: Payload = {}
        if e.state != "output-available":
            info["state"] = e.state
            if e.error_kind:
                info["errorKind"] = e.error_kind
        elif e.artifact is not None:  # the content is its preview; the link is here
            info["artifact"] = e.artifact
        if e.files and not has_content_parts(self.protocol_version):  # a string: beside it
            info["files"] = [agui_part(f) for f in e.files]
        if info:
            result["metadata"] = {"callwright": info}
        activity = self.progress.close(e)
        return result if activity is None else [_activity(e.call_id, activity), result]

    def _content(self, e: ToolCallResult) -> str | list[Payload]:
        """The result's text; with files, its content parts for a 1.1 client, else the
        text with a line naming each file (the parts go in the metadata)."""
        if not e.files:
            return e.content
        if not has_content_parts(self.protocol_version):
            return with_labels(e.content, e.files)
        text: list[Payload] = [{"type": "text", "text": e.content}] if e.content else []
        return text + [agui_part(f) for f in e.files]

    @on(ToolProgress)
    def _progress(self, e: ToolProgress) -> Payloads:
        return _activity(e.call_id, self.progress.report(e))

    @on(ToolPartialOutput)
    def _partial(self, e: ToolPartialOutput) -> Payloads:
        content = self.progress.of(e.call_id, e.tool_name)
        content["output"] = e.output
        return _activity(e.call_id, content)

    # delegated sub-runs

    @on(Subagent)
    def _subagent(self, e: Subagent, parent: str | None = None) -> Payloads:
        """A delegate's event, attributed to its sub-run (``subagentRunId``).

        The sub-run opens with SUBAGENT_STARTED (``parentToolCallId`` = the
        delegating call) and closes with SUBAGENT_FINISHED or SUBAGENT_ERROR.
        Its state events are dropped: clients apply STATE_* to the agent's one
        state whatever the attribution, and a sub-run's state is its own.
        """
        inner = e.event
        if isinstance(inner, Subagent):
            return self._subagent(inner, e.run_id)
        if isinstance(inner, RunStarted):
            started: Payload = {
                "type": "SUBAGENT_STARTED",
                "subagentRunId": e.run_id,
                "name": e.name,
                "parentToolCallId": e.call_id,
            }
            if parent is not None:
                started["parentSubagentRunId"] = parent
            return started
        if isinstance(inner, RunFinished) and inner.status in ("completed", "stopped"):
            finished: Payload = {"type": "SUBAGENT_FINISHED", "subagentRunId": e.run_id}
            if inner.output is not None:
                finished["result"] = inner.output
            finished["outcome"] = {"type": "success"}
            return finished
        if isinstance(inner, RunFinished):
            return _subagent_error(e.run_id, f"the sub-agent {inner.status}", inner.status)
        if isinstance(inner, RunError):
            return _subagent_error(e.run_id, inner.message, inner.code)
        if isinstance(inner, StateSnapshot | StateDelta):
            return None
        return [{**payload, "subagentRunId": e.run_id} for payload in self.payloads(inner)]

    # state and application events

    @on(StateSnapshot)
    def _state_snapshot(self, e: StateSnapshot) -> Payloads:
        return {"type": "STATE_SNAPSHOT", "snapshot": e.state}

    @on(StateDelta)
    def _state_delta(self, e: StateDelta) -> Payloads:
        return {"type": "STATE_DELTA", "delta": e.patch}

    @on(Custom)
    def _custom(self, e: Custom) -> Payloads:
        return {"type": "CUSTOM", "name": e.name, "value": e.value}


def _interrupt(pending: PendingCall) -> Payload:
    """One approval as an interrupt, answered by a ``resume`` entry of the next run."""
    message = f"Approve the call to {pending.tool_name}?"
    if pending.reason_for_call:
        message += f" Reason given: {pending.reason_for_call}"
    schema: Payload = {
        "type": "object",
        "properties": {
            "approved": {"type": "boolean"},
            "reason": {"type": "string"},
            "data": {"description": "Sent to the tool as ToolContext.approval.data."},
            "remember": {
                "enum": ["thread"],
                "description": "Approve this tool's calls for the rest of the thread.",
            },
        },
        "required": ["approved"],
    }
    if pending.edit_schema is not None:
        schema["properties"]["arguments"] = pending.edit_schema
    return {
        "id": pending.approval_id,
        "reason": INTERRUPT_REASON,
        "message": message,
        "toolCallId": pending.call_id,
        "responseSchema": schema,
    }


def _question(pending: PendingCall) -> Payload:
    """A call's question (MCP elicitation) as an ``input_required`` interrupt."""
    request = pending.request
    assert request is not None
    message = request.message if request.url is None else f"{request.message} ({request.url})"
    return {
        "id": request.id,
        "reason": INPUT_REASON,
        "message": message,
        "toolCallId": pending.call_id,
        "responseSchema": request.schema,
    }


def _token_usage(usage: Usage) -> Payload:
    """One AG-UI ``TokenUsage`` entry; the optional counts only where the provider gave them."""
    entry: Payload = {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "totalTokens": usage.total_tokens,
    }
    if usage.reasoning_tokens:
        entry["reasoningTokens"] = usage.reasoning_tokens
    if usage.cached_input_tokens:
        entry["cachedInputTokens"] = usage.cached_input_tokens
    return entry


def _activity(call_id: str, content: Payload) -> Payload:
    return {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": f"activity-{call_id}",
        "activityType": ACTIVITY_TYPE,
        "content": content,
        "replace": True,
    }


def _subagent_error(run_id: str, message: str, code: str) -> Payload:
    return {"type": "SUBAGENT_ERROR", "subagentRunId": run_id, "message": message, "code": code}
