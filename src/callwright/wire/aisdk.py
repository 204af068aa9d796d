"""Vercel AI SDK: ``useChat``'s request in, canonical events out as the UI message stream.

Written by hand: the AI SDK is JavaScript, there is no Python implementation to
lean on, and the stream is a small set of JSON chunks. The tests drive it with
the real ``ai`` 5, 6 and 7 clients (``AbstractChat``, the state machine behind
``useChat``), whose zod schemas reject a chunk with a null where a field is
optional, so every optional field here is omitted rather than null.

Choices worth knowing:

* **Version.** The chunk set differs by major version of ``ai``: approvals
  (``tool-approval-request``, ``tool-output-denied``) exist from 6 on, the
  ``finishReason`` enum differs (5 has ``unknown``, 7 adds ``interrupted``).
  The client's major version comes from the ``x-ai-sdk-version`` request
  header (``5``, ``6``, ``7`` or a full version such as ``6.0.326``; set it with
  ``new DefaultChatTransport({headers: {"x-ai-sdk-version": "7"}})``), else
  from the server option, default 6. On 5 a tool that needs approval ends the
  stream with an ``error`` chunk saying so, and a denial is sent as
  ``tool-output-error``.
* **One assistant message per response.** ``start.messageId`` is the id of the
  last assistant message when the request continues it (after a front-end
  tool's output or an approval), so the client appends to it instead of
  duplicating it; otherwise a new id.
* **Front-end tools** are tools without server code: the agent's own client
  tools, or ``tools`` sent in the request body (``[{name, description,
  parameters}]``, an extension: useChat sends none by default). Their parts stay
  ``input-available`` for ``onToolCall`` / ``addToolOutput``.
* **Progress** is a ``data-tool-progress`` part with id ``progress-<toolCallId>``
  (updated in place; ``data: {toolCallId, toolName, status, text?, fraction?}``);
  partial outputs are ``tool-output-available`` with ``preliminary: true``.
  Run state snapshots and deltas go out as transient ``data-state`` /
  ``data-state-delta`` parts (``onData`` only).
* **Errors** are ``{"type": "error", "errorText": "[code] message"}``.
* **Delegates**: the UI message stream has no place for a sub-run's own parts,
  so a sub-run shows as nested progress of the delegating call: its
  ``data-tool-progress`` part gains ``subagent: {runId, name, status, text,
  calls: [{toolCallId, toolName, state}]}``, updated in place as the sub-agent
  calls tools and writes (text is sent when a text segment ends, not per token).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..call import Decision, Denied, to_model_text
from ..events import (
    ApprovalRequested,
    Custom,
    Event,
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
from ._common import (
    ApprovalClaim,
    RunInput,
    WireError,
    client_tools_from,
    parse_arguments,
    quote,
    to_json,
)

VERSION_HEADER = "x-ai-sdk-version"
SUPPORTED_VERSIONS = (5, 6, 7)
HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
FINISH_REASONS = {
    5: frozenset({"stop", "length", "content-filter", "tool-calls", "error", "other", "unknown"}),
    6: frozenset({"stop", "length", "content-filter", "tool-calls", "error", "other"}),
    7: frozenset(
        {"stop", "length", "content-filter", "tool-calls", "error", "interrupted", "other"}
    ),
}
NOT_EXECUTED = "Not executed: the user sent a new message instead."
INTERRUPTED = "Interrupted: the tool did not finish."


def client_version(headers: Mapping[str, str], default: int = 6) -> int:
    """The ``ai`` major version from the ``x-ai-sdk-version`` header, else ``default``."""
    raw = headers.get(VERSION_HEADER)
    if raw is None:
        return default
    major = raw.strip().lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) not in SUPPORTED_VERSIONS:
        raise WireError(
            f"{VERSION_HEADER} must name ai 5, 6 or 7, not {raw!r}", "unsupported_version"
        )
    return int(major)


# --- request -> run input ----------------------------------------------------------------


def decode_request(body: Any) -> RunInput:
    """useChat's body (``id``, ``messages``, ``trigger``, ``messageId``) as a ``RunInput``.

    Approvals answered in the last assistant message become claims; calls left
    without a result in earlier messages are closed with a "not executed"
    result, since the conversation moved past them.
    """
    if not isinstance(body, dict):
        raise WireError("the request body must be a JSON object", "invalid_request")
    raw = body.get("messages")
    if not isinstance(raw, list):
        raise WireError("messages must be a list of UI messages", "invalid_request")
    messages: list[Message] = []
    claims: list[ApprovalClaim] = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("parts"), list):
            raise WireError("each UI message needs a parts list", "invalid_request")
        role = item.get("role")
        if role == "assistant":
            last = index == len(raw) - 1
            messages += _assistant(item, claims if last else None)
        elif role == "user":
            messages.append(UserMessage(_text(item["parts"]), _str(item.get("id"))))
        elif role == "system":
            messages.append(SystemMessage(_text(item["parts"])))
        else:
            raise WireError(f"unknown message role {role!r}", "invalid_request")
    chat_id = _str(body.get("id"))
    return RunInput(
        messages=messages,
        client_tools=client_tools_from(body.get("tools"), "tools"),
        claims=claims,
        thread_id=chat_id,
    )


def continued_message_id(body: Any) -> str | None:
    """The assistant message this response continues (the last message, if the assistant's)."""
    if not isinstance(body, dict) or body.get("trigger") == "regenerate-message":
        return None
    raw = body.get("messages")
    if isinstance(raw, list) and raw and isinstance(raw[-1], dict):
        last = raw[-1]
        if last.get("role") == "assistant":
            return _str(last.get("id"))
    return None


def _assistant(item: dict[str, Any], claims: list[ApprovalClaim] | None) -> list[Message]:
    """One UI assistant message -> an assistant message per step, each followed by its results.

    ``claims`` is None for messages before the last one: their open calls are closed.
    """
    out: list[Message] = []
    steps: list[list[dict[str, Any]]] = [[]]
    for part in item["parts"]:
        if isinstance(part, dict):
            if part.get("type") == "step-start":
                steps.append([])
            else:
                steps[-1].append(part)
    message_id = _str(item.get("id"))
    for parts in steps:
        text, reasoning = [], []
        calls: list[ToolCallPart] = []
        results: list[ToolResultMessage] = []
        for part in parts:
            kind = part.get("type")
            if kind == "text":
                text.append(str(part.get("text", "")))
            elif kind == "reasoning":
                reasoning.append(str(part.get("text", "")))
            elif isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool"):
                name = kind[5:] if kind != "dynamic-tool" else _str(part.get("toolName"))
                call_id = _str(part.get("toolCallId"))
                if not name or not call_id:
                    raise WireError("a tool part needs a toolCallId and a name", "invalid_request")
                calls.append(ToolCallPart(call_id, name, parse_arguments(part.get("input"))))
                result = _result(part, call_id, name, claims)
                if result is not None:
                    results.append(result)
                elif claims is None:
                    results.append(ToolResultMessage(call_id, name, NOT_EXECUTED, True))
        if text or reasoning or calls:
            out.append(AssistantMessage("".join(text), calls, "".join(reasoning), message_id))
            out += results
    return out


def _result(
    part: dict[str, Any], call_id: str, name: str, claims: list[ApprovalClaim] | None
) -> ToolResultMessage | None:
    """The result a tool part already carries; None while it waits (client output, approval)."""
    state = part.get("state")
    raw_approval = part.get("approval")
    approval: dict[str, Any] = raw_approval if isinstance(raw_approval, dict) else {}
    if state == "output-available":
        if part.get("preliminary") is True:  # the final output never arrived
            return ToolResultMessage(call_id, name, INTERRUPTED, True)
        return ToolResultMessage(call_id, name, to_model_text(part.get("output")))
    if state == "output-error":
        return ToolResultMessage(call_id, name, str(part.get("errorText") or "Tool failed."), True)
    if state == "output-denied":
        return ToolResultMessage(
            call_id, name, Denied(_str(approval.get("reason")) or "").model_text(), True
        )
    if state == "input-streaming":
        return ToolResultMessage(call_id, name, INTERRUPTED, True)
    if state == "approval-responded" and claims is not None:
        approval_id, approved = _str(approval.get("id")), approval.get("approved")
        if not approval_id or not isinstance(approved, bool):
            raise WireError(
                "an approval-responded part needs approval.id and approved", "invalid_request"
            )
        claims.append(
            ApprovalClaim(approval_id, Decision(approved, _str(approval.get("reason"))), call_id)
        )
    return None


def _text(parts: list[Any]) -> str:
    return "".join(
        str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text"
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# --- canonical events -> chunks ----------------------------------------------------------


def chunk(payload: dict[str, Any]) -> bytes:
    return b"data: " + to_json(payload) + b"\n\n"


class AISDKEncoder:
    """Encodes one run's canonical events as UI message stream chunks (``b""`` = nothing)."""

    def __init__(self, *, version: int = 6, message_id: str | None = None) -> None:
        if version not in SUPPORTED_VERSIONS:
            raise ValueError(f"ai version must be one of {SUPPORTED_VERSIONS}")
        self.version = version
        self.message_id = message_id
        self._finish = "stop"
        self._failed_input: set[str] = set()
        self._progress: dict[str, dict[str, Any]] = {}
        self._dispatch: dict[str, Callable[[Any], bytes]] = {
            RunStarted.type: self._start,
            RunFinished.type: self._finish_run,
            RunError.type: self._error,
            StepStarted.type: lambda e: b'data: {"type":"start-step"}\n\n',
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
            ApprovalRequested.type: self._approval,
            ToolProgress.type: self._tool_progress,
            Subagent.type: self._subagent,
            ToolPartialOutput.type: self._partial,
            ToolCallResult.type: self._result,
            StateSnapshot.type: lambda e: chunk(
                {"type": "data-state", "data": e.state, "transient": True}
            ),
            StateDelta.type: lambda e: chunk(
                {"type": "data-state-delta", "data": e.patch, "transient": True}
            ),
            Custom.type: lambda e: chunk({"type": f"data-{e.name}", "data": e.value}),
        }

    def encode(self, event: Event) -> bytes:
        handler = self._dispatch.get(event.type)
        return handler(event) if handler is not None else b""

    def error(self, message: str, code: str) -> bytes:
        """An error chunk for a failure outside the run (the server's own)."""
        return chunk({"type": "error", "errorText": f"[{code}] {message}"})

    def close(self) -> bytes:
        return b"data: [DONE]\n\n"

    # run and steps

    def _start(self, e: RunStarted) -> bytes:
        if self.message_id is None:
            self.message_id = f"msg_{e.run_id}"
        return chunk({"type": "start", "messageId": self.message_id})

    def _step_finished(self, e: StepFinished) -> bytes:
        self._finish = e.finish_reason
        return b'data: {"type":"finish-step"}\n\n'

    def _finish_run(self, e: RunFinished) -> bytes:
        if e.status == "paused":
            reason = "tool-calls"
        elif e.status == "cancelled":
            reason = "interrupted" if self.version >= 7 else "other"
        else:
            reason = self._finish
        if reason not in FINISH_REASONS[self.version]:
            reason = "other"
        return chunk({"type": "finish", "finishReason": reason})

    def _error(self, e: RunError) -> bytes:
        return self.error(e.message, e.code)

    # text and reasoning

    def _text_start(self, e: TextStart) -> bytes:
        return f'data: {{"type":"text-start","id":{quote(e.id)}}}\n\n'.encode()

    def _text_delta(self, e: TextDelta) -> bytes:
        return (
            f'data: {{"type":"text-delta","id":{quote(e.id)},'
            f'"delta":{quote(e.delta)}}}\n\n'.encode()
        )

    def _text_end(self, e: TextEnd) -> bytes:
        return f'data: {{"type":"text-end","id":{quote(e.id)}}}\n\n'.encode()

    def _reasoning_start(self, e: ReasoningStart) -> bytes:
        return f'data: {{"type":"reasoning-start","id":{quote(e.id)}}}\n\n'.encode()

    def _reasoning_delta(self, e: ReasoningDelta) -> bytes:
        return (
            f'data: {{"type":"reasoning-delta","id":{quote(e.id)},'
            f'"delta":{quote(e.delta)}}}\n\n'.encode()
        )

    def _reasoning_end(self, e: ReasoningEnd) -> bytes:
        return f'data: {{"type":"reasoning-end","id":{quote(e.id)}}}\n\n'.encode()

    # tool calls

    def _tool_start(self, e: ToolCallStart) -> bytes:
        payload: dict[str, Any] = {
            "type": "tool-input-start",
            "toolCallId": e.call_id,
            "toolName": e.tool_name,
        }
        if e.title is not None and self.version >= 6:
            payload["title"] = e.title
        return chunk(payload)

    def _tool_args(self, e: ToolCallArgs) -> bytes:
        return (
            f'data: {{"type":"tool-input-delta","toolCallId":{quote(e.call_id)},'
            f'"inputTextDelta":{quote(e.delta)}}}\n\n'.encode()
        )

    def _tool_end(self, e: ToolCallEnd) -> bytes:
        return chunk(
            {
                "type": "tool-input-available",
                "toolCallId": e.call_id,
                "toolName": e.tool_name,
                "input": e.arguments,
            }
        )

    def _tool_input_error(self, e: ToolInputError) -> bytes:
        self._failed_input.add(e.call_id)
        return chunk(
            {
                "type": "tool-input-error",
                "toolCallId": e.call_id,
                "toolName": e.tool_name,
                "input": e.input if e.input is not None else {},
                "errorText": e.error,
            }
        )

    def _approval(self, e: ApprovalRequested) -> bytes:
        if self.version < 6:
            return self.error(
                f"the call to {e.tool_name} needs approval, which needs ai 6 or later "
                f"(send the {VERSION_HEADER} header)",
                "approval_unsupported",
            )
        payload = {
            "type": "tool-approval-request",
            "approvalId": e.approval_id,
            "toolCallId": e.call_id,
        }
        if e.reason_for_call and self.version >= 7:  # ai 7 shows it as approval.requestReason
            payload["reason"] = e.reason_for_call
        return chunk(payload)

    def _tool_progress(self, e: ToolProgress) -> bytes:
        data = self._progress.get(e.call_id)
        if data is None:
            data = {"toolCallId": e.call_id, "toolName": e.tool_name, "status": "running"}
            self._progress[e.call_id] = data
        data["text"] = e.text
        if e.fraction is not None:
            data["fraction"] = e.fraction
        return self._progress_chunk(e.call_id, data)

    def _progress_chunk(self, call_id: str, data: dict[str, Any]) -> bytes:
        return chunk({"type": "data-tool-progress", "id": f"progress-{call_id}", "data": data})

    def _subagent(self, e: Subagent) -> bytes:
        """A delegate's event, folded into the delegating call's progress part."""
        inner = e.event
        data = self._progress.get(e.call_id)
        if data is None:
            data = {"toolCallId": e.call_id, "toolName": e.tool_name, "status": "running"}
            self._progress[e.call_id] = data
        sub = data.setdefault(
            "subagent",
            {"runId": e.run_id, "name": e.name, "status": "running", "text": "", "calls": []},
        )
        if isinstance(inner, TextDelta):
            sub["text"] += inner.delta
            return b""  # sent whole when the segment ends: no quadratic resend per token
        if isinstance(inner, ToolCallStart):
            sub["calls"].append(
                {
                    "toolCallId": inner.call_id,
                    "toolName": inner.tool_name,
                    "state": "input-streaming",
                }
            )
            data["text"] = f"{e.name}: calling {inner.tool_name}"
        elif isinstance(inner, ToolCallEnd | ToolCallResult):
            state = "input-available" if isinstance(inner, ToolCallEnd) else inner.state
            for item in sub["calls"]:
                if item["toolCallId"] == inner.call_id:
                    item["state"] = state
        elif isinstance(inner, ToolProgress):
            data["text"] = f"{e.name}: {inner.text}"
        elif isinstance(inner, RunFinished):
            sub["status"] = inner.status
        elif isinstance(inner, RunError):
            sub["status"] = "error"
        elif not isinstance(inner, TextEnd):
            return b""
        return self._progress_chunk(e.call_id, data)

    def _partial(self, e: ToolPartialOutput) -> bytes:
        return chunk(
            {
                "type": "tool-output-available",
                "toolCallId": e.call_id,
                "output": e.output,
                "preliminary": True,
            }
        )

    def _result(self, e: ToolCallResult) -> bytes:
        out = b""
        data = self._progress.pop(e.call_id, None)
        if data is not None:
            data["status"] = "complete" if e.state == "output-available" else "error"
            out = self._progress_chunk(e.call_id, data)
        if e.state == "output-available":
            payload = {"type": "tool-output-available", "toolCallId": e.call_id, "output": e.output}
        elif e.state == "output-denied" and self.version >= 6:
            payload = {"type": "tool-output-denied", "toolCallId": e.call_id}
        elif e.call_id in self._failed_input:  # already shown by tool-input-error
            return out
        else:
            payload = {
                "type": "tool-output-error",
                "toolCallId": e.call_id,
                "errorText": e.error or e.content,
            }
        return out + chunk(payload)
