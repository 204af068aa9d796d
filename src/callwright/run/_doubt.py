"""Calls in doubt, settled on resume: a crash left a started side-effecting call without
an outcome (the journal gave it an ``InDoubt`` result); resuming the run asks the tool's
``reconcile`` hook what became of it and, where the hook knows, puts the real result in
its place. Either way the resumed run reports the call's outcome as a result event, so a
front end that saw the call start (or never saw it end) shows what became of it."""

from __future__ import annotations

from ..call import (
    Call,
    CallState,
    InDoubt,
    idempotency_key,
    is_in_doubt,
    split_edit_note,
    strip_meta,
)
from ..events import ToolCallResult
from ..execute import result_event
from ..messages import AssistantMessage, Message, ToolResultMessage, last_assistant_index
from ..tool import reconciled
from ..toolbox import Toolbox


async def settle_in_doubt(
    messages: list[Message], toolbox: Toolbox, thread_id: str
) -> list[ToolCallResult]:
    """Reconcile the in-doubt results of the last assistant message's calls in place;
    returns a result event for each of them (the real result, or still in doubt)."""
    index = last_assistant_index(messages)
    if index < 0:
        return []
    assistant = messages[index]
    assert isinstance(assistant, AssistantMessage)
    parts = {p.id: (i, p) for i, p in enumerate(assistant.tool_calls)}
    events: list[ToolCallResult] = []
    for at in range(index + 1, len(messages)):
        message = messages[at]
        if not (isinstance(message, ToolResultMessage) and message.is_error):
            continue
        if message.call_id not in parts or not is_in_doubt(message.content):
            continue
        position, part = parts[message.call_id]
        tool = toolbox.get(message.tool_name)
        call = Call(message.call_id, message.tool_name, position, tool, CallState.INPUT_AVAILABLE)
        proposed = strip_meta(part.arguments)
        edited, _ = split_edit_note(message.content)
        call.arguments = proposed if edited is None else edited  # what ran, and its key
        key = idempotency_key(thread_id, call.id, call.arguments)
        result = None if tool is None else await reconciled(tool, key, call.arguments)
        if result is None:
            call.fail(InDoubt(message.content))
        else:
            call.proposed = proposed
            call.succeed(result)
            messages[at] = ToolResultMessage(call.id, call.tool_name, call.model_text())
        events.append(result_event(call))
    return events
