"""useChat's request body as a ``RunInput``: the request stage of ``aisdk``."""

from __future__ import annotations

from typing import Any

from ..call import Decision, Denied, to_model_text
from ..elicitation import InputAnswer, is_input_id
from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
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
from ._tool_files import aisdk_files_back

NOT_EXECUTED = "Not executed: the user sent a new message instead."
INTERRUPTED = "Interrupted: the tool did not finish."


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
        with_files = aisdk_files_back(part.get("output"))
        if with_files is not None:
            return ToolResultMessage(call_id, name, with_files[0], files=with_files[1])
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
