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
* **Approvals.** ``tool-approval-request`` asks a human (ai 6+). A policy's automatic
  decision reaches ai 7 as ``streamText`` sends it: ``tool-approval-request`` with
  ``isAutomatic: true``, then ``tool-approval-response`` (``approved``, ``reason``),
  then the output or ``tool-output-denied``; ai 5 and 6 have no such chunks and see
  only the result. An answer may carry ``data`` for the tool and ``remember:
  "thread"``, in the part's ``approval`` object or in the body's ``approvals``
  (``{approvalId: {data?, remember?}}``: ``addToolApprovalResponse``'s
  ``options.body``). ``onToolCall`` sees a front-end call when it is announced
  (``tool-input-available``), before any verdict, as with ``streamText``: a page
  should not run a call whose part ends ``output-denied``.
* **Front-end tools** are tools without server code: the agent's own client
  tools, or ``tools`` sent in the request body (``[{name, description,
  parameters}]``, an extension: useChat sends none by default). Their parts stay
  ``input-available`` for ``onToolCall`` / ``addToolOutput``.
* **A tool's question** (MCP elicitation, ``InputRequested``): the call's part stays
  ``input-available`` (re-sent as such when a resumed call asks again) and a
  ``data-input-request`` part with id ``input-<toolCallId>`` carries ``{toolCallId,
  toolName, requestId, message, requestedSchema, url?}``. The page answers like a
  front-end tool: ``addToolOutput({tool, toolCallId, output: {requestId, action:
  "accept"|"decline"|"cancel", content?}})``; the resumed run replaces that output
  with the call's real one.
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

from collections.abc import Mapping
from typing import Any, ClassVar

from ..call import Decision, Denied, to_model_text
from ..elicitation import InputAnswer, is_input_id
from ..events import (
    ApprovalRequested,
    ApprovalResolved,
    Custom,
    InputRequested,
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
from ._base import DeltaFrame, Payload, Payloads, SSEEncoder, major_version, on, sse_headers
from ._common import (
    MAX_CLIENT_TOOLS,
    MAX_MESSAGES,
    MAX_PARTS,
    MAX_SCHEMA_VALUES,
    ApprovalClaim,
    RunInput,
    WireError,
    check_count,
    check_parts,
    client_id,
    client_tools_from,
    optional_id,
    parse_arguments,
    with_extras,
)
from ._files import DEFAULT_FILE_LIMITS, FileLimits, aisdk_files

VERSION_HEADER = "x-ai-sdk-version"
SUPPORTED_VERSIONS = (5, 6, 7)
HEADERS = sse_headers({"x-vercel-ai-ui-message-stream": "v1"})
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
    major = major_version(raw)
    if major not in SUPPORTED_VERSIONS:
        raise WireError(
            f"{VERSION_HEADER} must name ai 5, 6 or 7, not {raw!r}", "unsupported_version"
        )
    return major


# --- request -> run input ----------------------------------------------------------------


def decode_request(
    body: Any,
    *,
    files: FileLimits = DEFAULT_FILE_LIMITS,
    max_messages: int = MAX_MESSAGES,
    max_tools: int = MAX_CLIENT_TOOLS,
    max_parts: int = MAX_PARTS,
    max_schema_values: int = MAX_SCHEMA_VALUES,
) -> RunInput:
    """useChat's body (``id``, ``messages``, ``trigger``, ``messageId``) as a ``RunInput``.

    Approvals answered in the last assistant message become claims; calls left
    without a result in earlier messages are closed with a "not executed"
    result, since the conversation moved past them. A user message's ``file`` parts
    become its ``files`` within ``files`` (see ``_files``). More messages, parts (in
    all), tools or schema values than allowed are refused before any is decoded.
    """
    if not isinstance(body, dict):
        raise WireError("the request body must be a JSON object", "invalid_request")
    raw = body.get("messages")
    if not isinstance(raw, list):
        raise WireError("messages must be a list of UI messages", "invalid_request")
    check_count(raw, max_messages, "messages", "too_many_messages")
    check_count(body.get("tools"), max_tools, "client tools", "too_many_tools")
    check_parts(raw, max_parts, ("parts",))
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
            attached = aisdk_files(item["parts"], files)
            messages.append(UserMessage(_text(item["parts"]), _message_id(item), attached))
        elif role == "system":
            messages.append(SystemMessage(_text(item["parts"])))
        else:
            raise WireError(f"unknown message role {role!r}", "invalid_request")
    chat_id = optional_id(body.get("id"), "the chat id")
    return RunInput(
        messages=messages,
        client_tools=client_tools_from(body.get("tools"), "tools", max_tools, max_schema_values),
        claims=_with_approvals(claims, body.get("approvals")),
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
    message_id = _message_id(item)
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
                client_id(call_id, "toolCallId")
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
        answer = _input_answer(part.get("output"))
        if answer is not None:  # the page answered the call's question, not the call
            if claims is None:
                return ToolResultMessage(call_id, name, NOT_EXECUTED, True)
            claims.append(ApprovalClaim(answer[0], answer[1], call_id))
            return None
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
        decision = with_extras(Decision(approved, _str(approval.get("reason"))), approval)
        claims.append(ApprovalClaim(client_id(approval_id, "approval.id"), decision, call_id))
    return None


def _with_approvals(claims: list[ApprovalClaim], approvals: Any) -> list[ApprovalClaim]:
    """The body's ``approvals``, ``{approvalId: {data?, remember?}}``, added to the claims
    they name: ``addToolApprovalResponse`` has no place for them, but its ``options.body``
    reaches the request that carries the decision."""
    if approvals is None:
        return claims
    if not isinstance(approvals, dict):
        raise WireError("approvals must map approval ids to {data?, remember?}", "invalid_request")
    for claim in claims:
        extra = approvals.get(claim.approval_id)
        if isinstance(claim.decision, Decision) and extra is not None:
            claim.decision = with_extras(claim.decision, extra)
    return claims


def _input_answer(output: Any) -> tuple[str, InputAnswer] | None:
    """``{requestId: "inp_...", action, content?}``: an answer to a call's question."""
    if not isinstance(output, dict):
        return None
    request_id = output.get("requestId")
    if not isinstance(request_id, str) or not is_input_id(request_id):
        return None
    action, content = output.get("action"), output.get("content")
    if action not in ("accept", "decline", "cancel") or not isinstance(content, dict | None):
        raise WireError(
            "an answer to a question needs action accept|decline|cancel and an object content",
            "invalid_request",
        )
    return client_id(request_id, "output.requestId"), InputAnswer(action, content)


def _text(parts: list[Any]) -> str:
    return "".join(
        str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text"
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _message_id(item: dict[str, Any]) -> str | None:
    return optional_id(item.get("id"), "a message id")


# --- canonical events -> chunks ----------------------------------------------------------


class AISDKEncoder(SSEEncoder):
    """Encodes one run's canonical events as UI message stream chunks (``b""`` = nothing)."""

    headers = HEADERS
    trailer = b"data: [DONE]\n\n"
    text_delta = DeltaFrame("text-delta", "id")
    reasoning_delta = DeltaFrame("reasoning-delta", "id")
    args_delta = DeltaFrame("tool-input-delta", "toolCallId", "inputTextDelta")
    closers: ClassVar[Mapping[str, tuple[str, str | None]]] = {
        "start-step": ("finish-step", None),
        "text-start": ("text-end", "id"),
        "reasoning-start": ("reasoning-end", "id"),
    }

    def __init__(
        self, *, version: int = 6, message_id: str | None = None, strip_paths: bool = False
    ) -> None:
        if version not in SUPPORTED_VERSIONS:
            raise ValueError(f"ai version must be one of {SUPPORTED_VERSIONS}")
        super().__init__(strip_paths=strip_paths)
        self.version = version
        self.message_id = message_id
        self._finish = "stop"
        self._failed_input: set[str] = set()
        self._announced: set[str] = set()

    # run and steps

    @on(RunStarted)
    def _start(self, e: RunStarted) -> Payloads:
        if self.message_id is None:
            self.message_id = f"msg_{e.run_id}"
        return {"type": "start", "messageId": self.message_id}

    @on(StepStarted)
    def _step_started(self, e: StepStarted) -> Payloads:
        return {"type": "start-step"}

    @on(StepFinished)
    def _step_finished(self, e: StepFinished) -> Payloads:
        self._finish = e.finish_reason
        return {"type": "finish-step"}

    @on(RunFinished)
    def _finish_run(self, e: RunFinished) -> Payloads:
        if e.status == "paused":
            reason = "tool-calls"
        elif e.status == "cancelled":
            reason = "interrupted" if self.version >= 7 else "other"
        else:
            reason = self._finish
        if reason not in FINISH_REASONS[self.version]:
            reason = "other"
        return {"type": "finish", "finishReason": reason}

    @on(RunError)
    def _run_error(self, e: RunError) -> Payloads:
        return _error(self.error_text(e.message), e.code)

    # text and reasoning (the deltas are the base's fast path)

    @on(TextStart)
    def _text_start(self, e: TextStart) -> Payloads:
        return {"type": "text-start", "id": e.id}

    @on(TextEnd)
    def _text_end(self, e: TextEnd) -> Payloads:
        return {"type": "text-end", "id": e.id}

    @on(ReasoningStart)
    def _reasoning_start(self, e: ReasoningStart) -> Payloads:
        return {"type": "reasoning-start", "id": e.id}

    @on(ReasoningEnd)
    def _reasoning_end(self, e: ReasoningEnd) -> Payloads:
        return {"type": "reasoning-end", "id": e.id}

    # tool calls

    @on(ToolCallStart)
    def _tool_start(self, e: ToolCallStart) -> Payloads:
        payload: Payload = {
            "type": "tool-input-start",
            "toolCallId": e.call_id,
            "toolName": e.tool_name,
        }
        if e.title is not None and self.version >= 6:
            payload["title"] = e.title
        return payload

    @on(ToolCallEnd)
    def _tool_end(self, e: ToolCallEnd) -> Payloads:
        self._announced.add(e.call_id)
        return {
            "type": "tool-input-available",
            "toolCallId": e.call_id,
            "toolName": e.tool_name,
            "input": e.arguments,
        }

    @on(InputRequested)
    def _input_request(self, e: InputRequested) -> Payloads:
        """The question as a data part; a call of an earlier stream is announced again as
        input-available, so that the page's answer (its output) is not already there."""
        request = e.request
        data: Payload = {
            "toolCallId": e.call_id,
            "toolName": e.tool_name,
            "requestId": request.id,
            "message": request.message,
            "requestedSchema": request.schema,
        }
        if request.url is not None:
            data["url"] = request.url
        out: list[Payload] = []
        if e.call_id not in self._announced:
            out.append(
                {
                    "type": "tool-input-available",
                    "toolCallId": e.call_id,
                    "toolName": e.tool_name,
                    "input": e.arguments,
                }
            )
        out.append({"type": "data-input-request", "id": f"input-{e.call_id}", "data": data})
        return out

    @on(ToolInputError)
    def _tool_input_error(self, e: ToolInputError) -> Payloads:
        self._failed_input.add(e.call_id)
        return {
            "type": "tool-input-error",
            "toolCallId": e.call_id,
            "toolName": e.tool_name,
            "input": e.input if e.input is not None else {},
            "errorText": e.error,
        }

    @on(ApprovalRequested)
    def _approval(self, e: ApprovalRequested) -> Payloads:
        if self.version < 6:
            return _error(
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
        return payload

    @on(ApprovalResolved)
    def _approval_resolved(self, e: ApprovalResolved) -> Payloads:
        """A policy's decision, as ai 7's ``streamText`` sends one: the request marked
        ``isAutomatic``, then the response (the result follows as usual). Nothing for a
        human's answer (the client has it) nor for ai 5 and 6, which have no such chunks."""
        if not e.automatic or self.version < 7 or e.approval_id is None:
            return None
        response: Payload = {
            "type": "tool-approval-response",
            "approvalId": e.approval_id,
            "approved": e.approved,
        }
        if e.reason:
            response["reason"] = e.reason
        request: Payload = {
            "type": "tool-approval-request",
            "approvalId": e.approval_id,
            "toolCallId": e.call_id,
            "isAutomatic": True,
        }
        return [request, response]

    @on(ToolProgress)
    def _tool_progress(self, e: ToolProgress) -> Payloads:
        return _progress(e.call_id, self.progress.report(e))

    @on(Subagent)
    def _subagent(self, e: Subagent) -> Payloads:
        """A delegate's event, folded into the delegating call's progress part."""
        inner = e.event
        data = self.progress.of(e.call_id, e.tool_name)
        sub = data.setdefault(
            "subagent",
            {"runId": e.run_id, "name": e.name, "status": "running", "text": "", "calls": []},
        )
        if isinstance(inner, TextDelta):
            sub["text"] += inner.delta
            return None  # sent whole when the segment ends: no quadratic resend per token
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
            return None
        return _progress(e.call_id, data)

    @on(ToolPartialOutput)
    def _partial(self, e: ToolPartialOutput) -> Payloads:
        return {
            "type": "tool-output-available",
            "toolCallId": e.call_id,
            "output": e.output,
            "preliminary": True,
        }

    @on(ToolCallResult)
    def _result(self, e: ToolCallResult) -> Payloads:
        progress = self.progress.close(e)
        out = [] if progress is None else [_progress(e.call_id, progress)]
        if e.state == "output-available":
            out.append(
                {"type": "tool-output-available", "toolCallId": e.call_id, "output": e.output}
            )
        elif e.state == "output-denied" and self.version >= 6:
            out.append({"type": "tool-output-denied", "toolCallId": e.call_id})
        elif e.call_id not in self._failed_input:  # else already shown by tool-input-error
            out.append(
                {
                    "type": "tool-output-error",
                    "toolCallId": e.call_id,
                    "errorText": e.error or e.content,
                }
            )
        return out

    # state and application events

    @on(StateSnapshot)
    def _state_snapshot(self, e: StateSnapshot) -> Payloads:
        return {"type": "data-state", "data": e.state, "transient": True}

    @on(StateDelta)
    def _state_delta(self, e: StateDelta) -> Payloads:
        return {"type": "data-state-delta", "data": e.patch, "transient": True}

    @on(Custom)
    def _custom(self, e: Custom) -> Payloads:
        return {"type": f"data-{e.name}", "data": e.value}


def _error(message: str, code: str) -> Payload:
    return {"type": "error", "errorText": f"[{code}] {message}"}


def _progress(call_id: str, data: Payload) -> Payload:
    return {"type": "data-tool-progress", "id": f"progress-{call_id}", "data": data}
