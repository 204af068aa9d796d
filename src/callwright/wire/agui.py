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
  and a ``responseSchema`` for ``{approved, reason?, arguments?}``; ``arguments``
  only where the tool allows edits). The next run's ``resume`` answers them.
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

import json
from collections.abc import Callable
from typing import Any

from ..call import Decision
from ..events import (
    Custom,
    Event,
    PendingCall,
    ReasoningDelta,
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
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
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
from ..toolbox import Toolbox
from ._common import (
    ApprovalClaim,
    RunInput,
    WireError,
    client_tools_from,
    parse_arguments,
    quote,
    text_of,
    to_json,
)

ACTIVITY_TYPE = "tool-activity"
INTERRUPT_REASON = "tool_call"
CONTENT_TYPE = "text/event-stream"


# --- request -> run input -------------------------------------------------------------


def decode_request(body: Any) -> RunInput:
    """A ``RunAgentInput`` as a ``RunInput``; raises ``WireError`` (400) when malformed."""
    if not isinstance(body, dict):
        raise WireError("the request body must be a RunAgentInput object", "invalid_request")
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list):
        raise WireError("RunAgentInput.messages must be a list", "invalid_request")
    messages = decode_messages(raw_messages)
    context = _context_message(body.get("context"))
    if context is not None:
        messages.insert(0, context)
    state = body.get("state")
    if state is not None and not isinstance(state, dict):
        raise WireError("RunAgentInput.state must be an object", "invalid_request")
    return RunInput(
        messages=messages,
        client_tools=client_tools_from(body.get("tools"), "RunAgentInput.tools"),
        claims=_claims(body.get("resume")),
        state=state,
        run_id=_optional_str(body, "runId"),
        thread_id=_optional_str(body, "threadId"),
    )


def wants_protocol_1(body: Any) -> bool:
    """Whether the client declared ``protocolVersion`` 1 or later (and so accepts 1.0-only
    fields). Clients before 1.0 send no version at all."""
    version = body.get("protocolVersion") if isinstance(body, dict) else None
    if not isinstance(version, str):
        return False
    major = version.strip().lstrip("v").split(".")[0]
    return major.isdigit() and int(major) >= 1


def decode_messages(raw: list[Any]) -> list[Message]:
    """AG-UI messages in the run loop's shape. Activity messages are UI-only and skipped;
    a reasoning message is attached to the assistant message that follows it."""
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
            out.append(UserMessage(text_of(item.get("content")), _id(item)))
        elif role == "assistant":
            calls = []
            for call in item.get("toolCalls") or ():
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict):
                    raise WireError("a tool call needs a function object", "invalid_request")
                call_id, name = call.get("id"), function.get("name")
                if not isinstance(call_id, str) or not isinstance(name, str):
                    raise WireError("a tool call needs an id and function.name", "invalid_request")
                names[call_id] = name
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
        if status == "cancelled":
            decision = Decision(False, _reason(payload) or "The user cancelled the request.")
        elif status == "resolved":
            decision = _decision(payload)
        else:
            raise WireError("resume status must be 'resolved' or 'cancelled'", "invalid_request")
        claims.append(ApprovalClaim(entry["interruptId"], decision))
    return claims


def _decision(payload: Any) -> Decision:
    if isinstance(payload, bool):
        return Decision(payload)
    if not isinstance(payload, dict) or not isinstance(payload.get("approved"), bool):
        raise WireError(
            "a resolved tool_call interrupt needs payload {approved: boolean, reason?, arguments?}",
            "invalid_request",
        )
    arguments = payload.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise WireError("payload.arguments must be an object", "invalid_request")
    return Decision(payload["approved"], _reason(payload), arguments)


def _reason(payload: Any) -> str | None:
    reason = payload.get("reason") if isinstance(payload, dict) else None
    return reason if isinstance(reason, str) and reason else None


def _optional_str(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    return value if isinstance(value, str) and value else None


def _id(item: dict[str, Any]) -> str | None:
    value = item.get("id")
    return value if isinstance(value, str) else None


# --- canonical events -> frames ----------------------------------------------------------


def frame(payload: dict[str, Any]) -> bytes:
    return b"data: " + to_json(payload) + b"\n\n"


class AGUIEncoder:
    """Encodes one run's canonical events as AG-UI SSE frames (``bytes``; ``b""`` = nothing).

    One instance per run: it remembers the open approvals and tool activities.
    """

    def __init__(self, *, protocol_1: bool = True, toolbox: Toolbox | None = None) -> None:
        self.protocol_1 = protocol_1
        self._toolbox = toolbox
        self._activity: dict[str, dict[str, Any]] = {}
        self._dispatch: dict[str, Callable[[Any], bytes]] = {
            RunStarted.type: self._run_started,
            RunFinished.type: self._run_finished,
            RunError.type: self._run_error,
            StepStarted.type: self._step_started,
            StepFinished.type: self._step_finished,
            TextStart.type: self._text_start,
            TextDelta.type: self._text_delta,
            TextEnd.type: self._text_end,
            ReasoningStart.type: self._reasoning_start,
            ReasoningDelta.type: self._reasoning_delta,
            ReasoningEnd.type: self._reasoning_end,
            ToolCallStart.type: self._tool_start,
            ToolCallArgs.type: self._tool_args,
            ToolCallEnd.type: self._tool_end,
            ToolInputError.type: self._tool_input_error,
            ToolCallResult.type: self._tool_result,
            ToolProgress.type: self._progress,
            ToolPartialOutput.type: self._partial,
            StateSnapshot.type: self._state_snapshot,
            StateDelta.type: self._state_delta,
            Custom.type: self._custom,
            Subagent.type: self._subagent,
        }

    def encode(self, event: Event) -> bytes:
        handler = self._dispatch.get(event.type)
        return handler(event) if handler is not None else b""

    def error(self, message: str, code: str) -> bytes:
        """A RUN_ERROR frame for a failure outside the run (the server's own)."""
        return frame({"type": "RUN_ERROR", "message": message, "code": code})

    # run and steps

    def _run_started(self, e: RunStarted) -> bytes:
        return frame({"type": "RUN_STARTED", "threadId": e.thread_id, "runId": e.run_id})

    def _run_finished(self, e: RunFinished) -> bytes:
        payload: dict[str, Any] = {
            "type": "RUN_FINISHED",
            "threadId": e.thread_id,
            "runId": e.run_id,
        }
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
        return frame(payload)

    def _outcome(self, e: RunFinished) -> dict[str, Any] | None:
        approvals = [p for p in e.pending if p.kind == "approval" and p.approval_id]
        if approvals:
            return {"type": "interrupt", "interrupts": [self._interrupt(p) for p in approvals]}
        if not self.protocol_1:
            return None
        if e.status == "cancelled":
            return {"type": "cancelled"}
        outcome: dict[str, Any] = {"type": "success"}
        pending = [p.call_id for p in e.pending if p.kind == "client"]
        if pending:
            outcome["pendingToolCallIds"] = pending
        return outcome

    def _interrupt(self, pending: PendingCall) -> dict[str, Any]:
        message = f"Approve the call to {pending.tool_name}?"
        if pending.reason_for_call:
            message += f" Reason given: {pending.reason_for_call}"
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
            "required": ["approved"],
        }
        tool = self._toolbox.get(pending.tool_name) if self._toolbox is not None else None
        if tool is not None and tool.allow_edits:
            schema["properties"]["arguments"] = tool.parameters
        return {
            "id": pending.approval_id,
            "reason": INTERRUPT_REASON,
            "message": message,
            "toolCallId": pending.call_id,
            "responseSchema": schema,
        }

    def _run_error(self, e: RunError) -> bytes:
        return frame({"type": "RUN_ERROR", "message": e.message, "code": e.code})

    def _step_started(self, e: StepStarted) -> bytes:
        return f'data: {{"type":"STEP_STARTED","stepName":"step-{e.step}"}}\n\n'.encode()

    def _step_finished(self, e: StepFinished) -> bytes:
        return f'data: {{"type":"STEP_FINISHED","stepName":"step-{e.step}"}}\n\n'.encode()

    # text and reasoning

    def _text_start(self, e: TextStart) -> bytes:
        return (
            f'data: {{"type":"TEXT_MESSAGE_START","messageId":{quote(e.id)},'
            f'"role":"assistant"}}\n\n'.encode()
        )

    def _text_delta(self, e: TextDelta) -> bytes:
        if not e.delta:
            return b""
        return (
            f'data: {{"type":"TEXT_MESSAGE_CONTENT","messageId":{quote(e.id)},'
            f'"delta":{quote(e.delta)}}}\n\n'.encode()
        )

    def _text_end(self, e: TextEnd) -> bytes:
        return f'data: {{"type":"TEXT_MESSAGE_END","messageId":{quote(e.id)}}}\n\n'.encode()

    def _reasoning_start(self, e: ReasoningStart) -> bytes:
        mid = quote(e.id)
        return (
            f'data: {{"type":"REASONING_START","messageId":{mid}}}\n\n'
            f'data: {{"type":"REASONING_MESSAGE_START","messageId":{mid},"role":"reasoning"}}\n\n'
        ).encode()

    def _reasoning_delta(self, e: ReasoningDelta) -> bytes:
        if not e.delta:
            return b""
        return (
            f'data: {{"type":"REASONING_MESSAGE_CONTENT","messageId":{quote(e.id)},'
            f'"delta":{quote(e.delta)}}}\n\n'.encode()
        )

    def _reasoning_end(self, e: ReasoningEnd) -> bytes:
        mid = quote(e.id)
        return (
            f'data: {{"type":"REASONING_MESSAGE_END","messageId":{mid}}}\n\n'
            f'data: {{"type":"REASONING_END","messageId":{mid}}}\n\n'
        ).encode()

    # tool calls

    def _tool_start(self, e: ToolCallStart) -> bytes:
        return (
            f'data: {{"type":"TOOL_CALL_START","toolCallId":{quote(e.call_id)},'
            f'"toolCallName":{quote(e.tool_name)},"parentMessageId":{quote(e.message_id)}}}\n\n'
        ).encode()

    def _tool_args(self, e: ToolCallArgs) -> bytes:
        if not e.delta:
            return b""
        return (
            f'data: {{"type":"TOOL_CALL_ARGS","toolCallId":{quote(e.call_id)},'
            f'"delta":{quote(e.delta)}}}\n\n'.encode()
        )

    def _tool_end(self, e: ToolCallEnd | ToolInputError) -> bytes:
        return f'data: {{"type":"TOOL_CALL_END","toolCallId":{quote(e.call_id)}}}\n\n'.encode()

    def _tool_input_error(self, e: ToolInputError) -> bytes:
        # The call is closed here; its error result follows as TOOL_CALL_RESULT.
        return self._tool_end(e)

    def _tool_result(self, e: ToolCallResult) -> bytes:
        payload: dict[str, Any] = {
            "type": "TOOL_CALL_RESULT",
            "messageId": f"result-{e.call_id}",
            "toolCallId": e.call_id,
            "content": e.content,
            "role": "tool",
        }
        if e.state != "output-available":
            info: dict[str, Any] = {"state": e.state}
            if e.error_kind:
                info["errorKind"] = e.error_kind
            payload["metadata"] = {"callwright": info}
        out = frame(payload)
        activity = self._activity.pop(e.call_id, None)
        if activity is not None:
            activity["status"] = "complete" if e.state == "output-available" else "error"
            out = self._activity_frame(e.call_id, activity) + out
        return out

    def _progress(self, e: ToolProgress) -> bytes:
        content = self._activity_for(e.call_id, e.tool_name)
        content["text"] = e.text
        if e.fraction is not None:
            content["fraction"] = e.fraction
        return self._activity_frame(e.call_id, content)

    def _partial(self, e: ToolPartialOutput) -> bytes:
        content = self._activity_for(e.call_id, e.tool_name)
        content["output"] = e.output
        return self._activity_frame(e.call_id, content)

    def _activity_for(self, call_id: str, tool_name: str) -> dict[str, Any]:
        content = self._activity.get(call_id)
        if content is None:
            content = {"toolCallId": call_id, "toolName": tool_name, "status": "running"}
            self._activity[call_id] = content
        return content

    def _activity_frame(self, call_id: str, content: dict[str, Any]) -> bytes:
        return frame(
            {
                "type": "ACTIVITY_SNAPSHOT",
                "messageId": f"activity-{call_id}",
                "activityType": ACTIVITY_TYPE,
                "content": content,
                "replace": True,
            }
        )

    # delegated sub-runs

    def _subagent(self, e: Subagent, parent: str | None = None) -> bytes:
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
            started: dict[str, Any] = {
                "type": "SUBAGENT_STARTED",
                "subagentRunId": e.run_id,
                "name": e.name,
                "parentToolCallId": e.call_id,
            }
            if parent is not None:
                started["parentSubagentRunId"] = parent
            return frame(started)
        if isinstance(inner, RunFinished) and inner.status in ("completed", "stopped"):
            finished: dict[str, Any] = {"type": "SUBAGENT_FINISHED", "subagentRunId": e.run_id}
            if inner.output is not None:
                finished["result"] = inner.output
            finished["outcome"] = {"type": "success"}
            return frame(finished)
        if isinstance(inner, RunFinished | RunError):
            message = (
                inner.message if isinstance(inner, RunError) else f"the sub-agent {inner.status}"
            )
            code = inner.code if isinstance(inner, RunError) else inner.status
            return frame(
                {
                    "type": "SUBAGENT_ERROR",
                    "subagentRunId": e.run_id,
                    "message": message,
                    "code": code,
                }
            )
        if isinstance(inner, StateSnapshot | StateDelta):
            return b""
        out = self.encode(inner)
        if not out:
            return out
        attributed = b"".join(
            frame({**json.loads(block[len(b"data: ") :]), "subagentRunId": e.run_id})
            for block in out.split(b"\n\n")
            if block
        )
        return attributed

    # state and application events

    def _state_snapshot(self, e: StateSnapshot) -> bytes:
        return frame({"type": "STATE_SNAPSHOT", "snapshot": e.state})

    def _state_delta(self, e: StateDelta) -> bytes:
        return frame({"type": "STATE_DELTA", "delta": e.patch})

    def _custom(self, e: Custom) -> bytes:
        return frame({"type": "CUSTOM", "name": e.name, "value": e.value})
