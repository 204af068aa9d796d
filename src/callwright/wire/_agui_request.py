"""AG-UI's ``RunAgentInput`` as a ``RunInput``: the request stage of ``agui``."""

from __future__ import annotations

from typing import Any

from ..call import Decision
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
from ._tool_files import agui_files_back


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
            attached, skipped = agui_files(content, files)
            said = "\n".join(filter(None, [text_of(content), *skipped]))
            out.append(UserMessage(said, _id(item), attached))
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
    """A tool message; the media parts of a 1.1 result (its content a part list) are its
    files again, so the model sees them on the next turn as it did on the first."""
    attached = agui_files_back(item.get("content"))
    content = text_of(item.get("content"))
    error = item.get("error")
    meta = item.get("metadata")
    ours = meta.get("callwright") if isinstance(meta, dict) else None
    failed = isinstance(error, str) or (
        isinstance(ours, dict) and ours.get("state") in ("output-error", "output-denied")
    )
    if isinstance(error, str) and not content:
        content = error
    return ToolResultMessage(call_id, name, content, failed, files=attached)


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
