"""AG-UI: a ``RunAgentInput`` request in, canonical events out as AG-UI SSE frames.

Written by hand rather than with the ``ag-ui-protocol`` package's models and
``EventEncoder``: building a pydantic event and dumping it costs several
microseconds per token, while the frames here are plain dicts (or, for the
per-token events, one f-string) serialised by pydantic-core. The tests validate
every frame we send against that package's models and the real JS clients.

Choices worth knowing:

* **Frames** are ``data: {json}\\n\\n`` with LF only (CRLF breaks the JS client).
* **Tool progress and partial outputs are ACTIVITY_SNAPSHOT events**, one
  activity message per tool call (id ``activity-<toolCallId>``, activityType
  ``tool-activity``; content ``{toolCallId, toolName, status, text?, fraction?,
  output?}``). The client *keeps* activity messages in its message list and
  replaces them in place, so a UI can render live progress from state alone and
  still has it after the run; a CUSTOM event would only reach subscribers at the
  moment it passes. Clients drop activity messages from the next request.
* **Front-end tools** (``RunAgentInput.tools``) end the run as a success with
  ``outcome.pendingToolCallIds``: exactly the calls without a result. No
  placeholder TOOL_CALL_RESULT is ever sent for them.
* **Approvals** end the run with an interrupt outcome, one interrupt per call
  (``id`` = the approval id, ``reason: "tool_call"``, ``toolCallId``, a message,
  and a ``responseSchema`` for ``{approved, reason?, arguments?, data?, remember?}``;
  ``arguments`` only where the tool allows edits). The next run's ``resume`` answers
  them: ``data`` reaches the tool as ``ToolContext.approval.data``, and ``remember:
  "thread"`` approves the tool's later calls in the thread. A policy's automatic
  decision has no AG-UI event: an approved call just runs, a denied one's
  TOOL_CALL_RESULT carries ``Tool call denied: <reason>`` (state ``output-denied``).
* **A tool's question** (MCP elicitation, ``InputRequested``) ends the run with an
  interrupt too: ``id`` = the question's id (``inp_...``), ``reason:
  "input_required"``, ``toolCallId``, its message, and the form asked for as the
  ``responseSchema``. A ``resume`` entry ``{status: "resolved", payload: {...form}}``
  accepts with the filled-in form; ``{status: "cancelled"}`` cancels, and
  ``{status: "cancelled", payload: {"action": "decline"}}`` declines.
* **Protocol versions.** Fields that exist only in AG-UI 1.0 are sent only when
  the request declares ``protocolVersion`` (1.0 clients always do; @ag-ui/client
  0.0.59 does not, and its strict outcome schema rejects unknown keys). A 0.0.59
  client gets: the same interrupt outcome for approvals (0.0.59 already has
  interrupts and ``resume``); no ``outcome`` at all for a run paused on
  front-end tools (it then derives the pending calls itself: the calls started
  without a result) and for a cancelled run (it has no "cancelled" outcome).
* **Delegates** (``_delegate`` calls): the sub-run's events carry its
  ``subagentRunId`` between SUBAGENT_STARTED (``parentToolCallId`` = the
  delegating call) and SUBAGENT_FINISHED / SUBAGENT_ERROR; its state events are
  not sent (clients would apply them to the parent's state). Messages a client
  sends back with a ``subagentRunId`` are the delegate's own and are skipped.
* **Tool errors**: TOOL_CALL_RESULT has no error field, so a failed or denied
  call's result carries the error text as content and
  ``metadata: {"callwright": {"state": "output-error"|"output-denied", ...}}``;
  a tool message sent back with that metadata is read as an error result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..call import Decision
from ..elicitation import InputAnswer, is_input_id
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
from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
from ._base import HEADERS, DeltaFrame, Payload, Payloads, SSEEncoder, major_version, on
from ._common import (
    MAX_CLIENT_TOOLS,
    MAX_MESSAGES,
    MAX_PARTS,
    MAX_SCHEMA_VALUES,
    MAX_STATE_VALUES,
    ApprovalClaim,
    RunInput,
    WireError,
    check_count,
    check_parts,
    check_values,
    client_id,
    client_tools_from,
    optional_id,
    parse_arguments,
    text_of,
    with_extras,
)
from ._files import DEFAULT_FILE_LIMITS, FileLimits, agui_files

__all__ = ["HEADERS", "AGUIEncoder", "decode_messages", "decode_request", "wants_protocol_1"]

ACTIVITY_TYPE = "tool-activity"
INTERRUPT_REASON = "tool_call"
INPUT_REASON = "input_required"


# --- request -> run input -------------------------------------------------------------


def decode_request(
    body: Any,
    *,
    files: FileLimits = DEFAULT_FILE_LIMITS,
    max_messages: int = MAX_MESSAGES,
    max_tools: int = MAX_CLIENT_TOOLS,
    max_parts: int = MAX_PARTS,
    max_state_values: int = MAX_STATE_VALUES,
    max_schema_values: int = MAX_SCHEMA_VALUES,
) -> RunInput:
    """A ``RunAgentInput`` as a ``RunInput``; raises ``WireError`` (4xx) when malformed,
    when a user message's files are beyond ``files`` (see ``_files``), or when it holds
    more messages, parts (content parts and tool calls, in all), tools, values in
    ``state`` or ``forwardedProps`` or in one tool's schema than allowed (checked before
    any is decoded)."""
    if not isinstance(body, dict):
        raise WireError("the request body must be a RunAgentInput object", "invalid_request")
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list):
        raise WireError("RunAgentInput.messages must be a list", "invalid_request")
    check_count(raw_messages, max_messages, "messages", "too_many_messages")
    check_count(body.get("tools"), max_tools, "client tools", "too_many_tools")
    check_parts(raw_messages, max_parts, ("content", "toolCalls"))
    check_values(body.get("state"), max_state_values, "RunAgentInput.state", "state_too_large")
    props = body.get("forwardedProps")
    check_values(props, max_state_values, "RunAgentInput.forwardedProps", "state_too_large")
    messages = decode_messages(raw_messages, files)
    context = _context_message(body.get("context"))
    if context is not None:
        messages.insert(0, context)
    state = body.get("state")
    if state is not None and not isinstance(state, dict):
        raise WireError("RunAgentInput.state must be an object", "invalid_request")
    if props is not None and not isinstance(props, dict):
        raise WireError("RunAgentInput.forwardedProps must be an object", "invalid_request")
    return RunInput(
        messages=messages,
        client_tools=client_tools_from(
            body.get("tools"), "RunAgentInput.tools", max_tools, max_schema_values
        ),
        claims=_claims(body.get("resume")),
        state=state,
        run_id=optional_id(body.get("runId"), "runId"),
        thread_id=optional_id(body.get("threadId"), "threadId"),
        forwarded_props=props or {},
    )


def wants_protocol_1(body: Any) -> bool:
    """Whether the client declared ``protocolVersion`` 1 or later (and so accepts 1.0-only
    fields). Clients before 1.0 send no version at all."""
    version = body.get("protocolVersion") if isinstance(body, dict) else None
    major = major_version(version) if isinstance(version, str) else None
    return major is not None and major >= 1


def decode_messages(raw: list[Any], files: FileLimits = DEFAULT_FILE_LIMITS) -> list[Message]:
    """AG-UI messages in the run loop's shape. Activity messages are UI-only and skipped;
    a reasoning message is attached to the assistant message that follows it; a user
    message's media parts become its ``files``."""
    out: list[Message] = []
    names: dict[str, str] = {}
    reasoning = ""
    for item in raw:
        if not isinstance(item, dict):
            raise WireError("each message must be an object", "invalid_request")
        if item.get("subagentRunId") is not None:  # a delegate's own conversation
            continue
        role = item.get("role")
        if role in ("system", "developer"):
            out.append(SystemMessage(text_of(item.get("content"))))
        elif role == "user":
            content = item.get("content")
            out.append(UserMessage(text_of(content), _id(item), agui_files(content, files)))
        elif role == "assistant":
            calls = []
            for call in item.get("toolCalls") or ():
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict):
                    raise WireError("a tool call needs a function object", "invalid_request")
                call_id, name = call.get("id"), function.get("name")
                if not isinstance(call_id, str) or not isinstance(name, str):
                    raise WireError("a tool call needs an id and function.name", "invalid_request")
                names[client_id(call_id, "a tool call id")] = name
                arguments = parse_arguments(function.get("arguments"))
                calls.append(ToolCallPart(call_id, name, arguments))
            text = item.get("content")
            out.append(
                AssistantMessage(text if isinstance(text, str) else "", calls, reasoning, _id(item))
            )
            reasoning = ""
        elif role == "tool":
            call_id = item.get("toolCallId")
            if not isinstance(call_id, str):
                raise WireError("a tool message needs a toolCallId", "invalid_request")
            client_id(call_id, "toolCallId")
            out.append(_tool_result(item, call_id, names.get(call_id, "")))
        elif role == "reasoning":
            reasoning += text_of(item.get("content"))
        elif role == "activity":
            continue
        else:
            raise WireError(f"unknown message role {role!r}", "invalid_request")
    return out


def _tool_result(item: dict[str, Any], call_id: str, name: str) -> ToolResultMessage:
    content = text_of(item.get("content"))
    error = item.get("error")
    meta = item.get("metadata")
    ours = meta.get("callwright") if isinstance(meta, dict) else None
    failed = isinstance(error, str) or (
        isinstance(ours, dict) and ours.get("state") in ("output-error", "output-denied")
    )
    if isinstance(error, str) and not content:
        content = error
    return ToolResultMessage(call_id, name, content, failed)


def _context_message(context: Any) -> SystemMessage | None:
    """AG-UI ``context`` entries, shown to the model as one system message."""
    if not isinstance(context, list) or not context:
        return None
    lines = [
        f"- {entry.get('description', '')}: {entry.get('value', '')}"
        for entry in context
        if isinstance(entry, dict)
    ]
    return SystemMessage("Context from the application:\n" + "\n".join(lines)) if lines else None


def _claims(resume: Any) -> list[ApprovalClaim]:
    """``resume`` entries as approval claims: ``payload`` is ``{approved, reason?, arguments?}``
    (a bare boolean is accepted too); a cancelled interrupt is a denial."""
    if resume is None:
        return []
    if not isinstance(resume, list):
        raise WireError("RunAgentInput.resume must be a list", "invalid_request")
    claims = []
    for entry in resume:
        if not isinstance(entry, dict) or not isinstance(entry.get("interruptId"), str):
            raise WireError("each resume entry needs an interruptId", "invalid_request")
        status, payload = entry.get("status"), entry.get("payload")
        interrupt_id = client_id(entry["interruptId"], "interruptId")
        if is_input_id(interrupt_id):
            claims.append(ApprovalClaim(interrupt_id, _input_answer(status, payload)))
            continue
        if status == "cancelled":
            decision = Decision(False, _reason(payload) or "The user cancelled the request.")
        elif status == "resolved":
            decision = _decision(payload)
        else:
            raise WireError("resume status must be 'resolved' or 'cancelled'", "invalid_request")
        claims.append(ApprovalClaim(client_id(entry["interruptId"], "interruptId"), decision))
    return claims


def _input_answer(status: Any, payload: Any) -> InputAnswer:
    """An ``input_required`` interrupt's resume entry: resolved with the form accepts;
    cancelled cancels, or declines with ``payload: {"action": "decline"}``."""
    if status == "resolved":
        if not isinstance(payload, dict):
            raise WireError(
                "a resolved input_required interrupt needs the filled-in form as its payload",
                "invalid_request",
            )
        return InputAnswer("accept", payload)
    if status == "cancelled":
        action = payload.get("action") if isinstance(payload, dict) else None
        return InputAnswer("decline" if action == "decline" else "cancel")
    raise WireError("resume status must be 'resolved' or 'cancelled'", "invalid_request")


def _decision(payload: Any) -> Decision:
    if isinstance(payload, bool):
        return Decision(payload)
    if not isinstance(payload, dict) or not isinstance(payload.get("approved"), bool):
        raise WireError(
            "a resolved tool_call interrupt needs payload "
            '{approved: boolean, reason?, arguments?, data?, remember?: "thread"}',
            "invalid_request",
        )
    arguments = payload.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise WireError("payload.arguments must be an object", "invalid_request")
    return with_extras(Decision(payload["approved"], _reason(payload), arguments), payload)


def _reason(payload: Any) -> str | None:
    reason = payload.get("reason") if isinstance(payload, dict) else None
    return reason if isinstance(reason, str) and reason else None


def _id(item: dict[str, Any]) -> str | None:
    return optional_id(item.get("id"), "a message id")


# --- canonical events -> frames ----------------------------------------------------------


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

    def __init__(self, *, protocol_1: bool = True, strip_paths: bool = False) -> None:
        super().__init__(strip_paths=strip_paths)
        self.protocol_1 = protocol_1
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
        return {"type": "RUN_STARTED", "threadId": e.thread_id, "runId": e.run_id}

    @on(RunFinished)
    def _run_finished(self, e: RunFinished) -> Payloads:
        payload: Payload = {"type": "RUN_FINISHED", "threadId": e.thread_id, "runId": e.run_id}
        if e.output is not None and e.status != "paused":
            payload["result"] = e.output
        outcome = self._outcome(e)
        if outcome is not None:
            payload["outcome"] = outcome
        usage = e.usage
        if usage.requests:
            payload["usage"] = [
                {
                    "inputTokens": usage.input_tokens,
                    "outputTokens": usage.output_tokens,
                    "totalTokens": usage.total_tokens,
                }
            ]
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
        return {"type": "RUN_ERROR", "message": self.error_text(e.message), "code": e.code}

    @on(StepStarted)
    def _step_started(self, e: StepStarted) -> Payloads:
        return {"type": "STEP_STARTED", "stepName": f"step-{e.step + self.steps_before}"}

    @on(StepFinished)
    def _step_finished(self, e: StepFinished) -> Payloads:
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
            "content": e.content,
            "role": "tool",
        }
        if e.state != "output-available":
            info: Payload = {"state": e.state}
            if e.error_kind:
                info["errorKind"] = e.error_kind
            result["metadata"] = {"callwright": info}
        elif e.artifact is not None:  # the content is its preview; the link is here
            result["metadata"] = {"callwright": {"artifact": e.artifact}}
        activity = self.progress.close(e)
        return result if activity is None else [_activity(e.call_id, activity), result]

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
