"""Canonical events as UI message stream chunks: the encoding stage of ``aisdk``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

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
from ._aisdk_versions import FINISH_REASONS, SUPPORTED_VERSIONS, VERSION_HEADER
from ._base import DeltaFrame, Payload, Payloads, SSEEncoder, on, payloads_of, sse, sse_headers
from ._tool_files import aisdk_output

HEADERS = sse_headers({"x-vercel-ai-ui-message-stream": "v1"})


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

    def continue_after(self, frames: Iterable[bytes]) -> list[bytes]:
        """As the base class; but for ai 7, a step the dead process left in its model turn
        (no call announced yet) is retracted with ``reset-step`` rather than closed: the
        continuing process asks the model again, and its answer replaces the half one
        instead of following it. Earlier clients have no ``reset-step``: theirs is closed."""
        kept = _unretracted(list(frames))
        closing = super().continue_after(kept)
        if self.version < 7 or not _in_model_turn(payloads_of(kept)):
            return closing
        return [sse({"type": "reset-step"}), sse({"type": "finish-step"})]

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
            output = aisdk_output(e.content, e.files, self.version) if e.files else e.output
            out.append({"type": "tool-output-available", "toolCallId": e.call_id, "output": output})
        elif e.state == "output-denied" and self.version >= 6:
            out.append({"type": "tool-output-denied", "toolCallId": e.call_id})
        elif e.call_id not in self._failed_input:  # else already shown by tool-input-error
            error: Payload = {
                "type": "tool-output-error",
                "toolCallId": e.call_id,
                "errorText": e.error or e.content,
            }
            if e.error_kind and self.version >= 7:  # the UI part's toolMetadata (ai 7 on)
                error["toolMetadata"] = {"callwright": {"errorKind": e.error_kind}}
            out.append(error)
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


def _unretracted(frames: list[bytes]) -> list[bytes]:
    """The frames without those a ``reset-step`` retracted (its step's, after its
    ``start-step``): what a client still holds."""
    out: list[bytes] = []
    step = 0
    for frame in frames:
        kind = payloads_of([frame])[0].get("type") if frame.startswith(b"data: {") else None
        if kind == "reset-step":
            del out[step:]
            continue
        if kind == "start-step":
            step = len(out) + 1
        out.append(frame)
    return out


def _in_model_turn(payloads: list[Payload]) -> bool:
    """Whether the stream ends inside a step whose model turn announced no tool call."""
    for payload in reversed(payloads):
        kind = payload.get("type")
        if kind == "start-step":
            return True
        if kind == "finish-step" or (isinstance(kind, str) and kind.startswith("tool-")):
            return False
    return False


def _error(message: str, code: str) -> Payload:
    return {"type": "error", "errorText": f"[{code}] {message}"}


def _progress(call_id: str, data: Payload) -> Payload:
    return {"type": "data-tool-progress", "id": f"progress-{call_id}", "data": data}
