"""Continuing a conversation: the calls still open, the decisions for them, and the
results merged back into the history in call order."""

from __future__ import annotations

import json
from collections.abc import Mapping

from .. import acts
from .._errors import CallwrightError
from ..call import (
    ArgumentBuffer,
    Call,
    CallState,
    Decision,
    Skipped,
    ToolError,
    ToolResult,
    split_meta,
)
from ..elicitation import InputAnswer
from ..events import StateDelta
from ..messages import (
    AssistantMessage,
    Message,
    ToolResultMessage,
    last_assistant_index,
)
from ..state import RunState
from ..toolbox import Toolbox


class UnknownDecision(CallwrightError, ValueError):
    """A decision (or an input answer) names a call that is not waiting for one."""

    def __init__(self, call_ids: list[str]) -> None:
        super().__init__(
            f"decisions for calls that are not waiting: {', '.join(call_ids)}. Key each "
            "decision by the call_id of one of the paused result's pending calls "
            "(result.pending), and pass that result's messages as messages="
        )
        self.call_ids = call_ids
        """The ids that answer nothing."""


def _answered(messages: list[Message], index: int) -> set[str]:
    return {m.call_id for m in messages[index + 1 :] if isinstance(m, ToolResultMessage)}


def check_decisions(
    history: list[Message], decisions: Mapping[str, Decision | InputAnswer]
) -> None:
    """A decision must answer a call of the last assistant message that has no result."""
    index = last_assistant_index(history)
    open_ids: set[str] = set()
    if index >= 0:
        message = history[index]
        assert isinstance(message, AssistantMessage)
        answered = _answered(history, index)
        open_ids = {p.id for p in message.tool_calls if p.id not in answered}
    unknown = sorted(set(decisions) - open_ids)
    if unknown:
        raise UnknownDecision(unknown)


def open_calls(messages: list[Message], toolbox: Toolbox) -> list[Call]:
    """Calls of the last assistant message that have no result yet.

    When the user wrote after that message instead of answering, each open call
    is skipped: it gets its one result, and the model learns why.
    """
    index = last_assistant_index(messages)
    if index < 0:
        return []
    message = messages[index]
    assert isinstance(message, AssistantMessage)
    answered = _answered(messages, index)
    interrupted = any(not isinstance(m, ToolResultMessage) for m in messages[index + 1 :])
    calls = []
    for i, part in enumerate(message.tool_calls):
        if part.id in answered:
            continue
        call = Call(part.id, part.name, i, toolbox.get(part.name), CallState.INPUT_AVAILABLE)
        call.buffer = ArgumentBuffer(json.dumps(part.arguments))
        if interrupted:
            call.arguments, call.meta = split_meta(part.arguments)
            call.fail(Skipped("Not executed: the user sent a new message instead."))
        else:
            try:
                acts.restore_input(call, part.arguments)
            except ToolError as exc:
                call.fail(exc)
        calls.append(call)
    return calls


def client_writes(messages: list[Message], toolbox: Toolbox, state: RunState) -> list[StateDelta]:
    """Store the front end's results at their calls' ``_outputPath``, as a server tool's
    result would have been, before the open calls run: a call of the same step that
    reads that path (``†state.x``) waited for exactly this value.

    Only the last assistant message's front-end calls count, and only results the run
    has not yet answered with a later model turn, so a result is written once.
    """
    index = last_assistant_index(messages)
    if index < 0:
        return []
    message = messages[index]
    assert isinstance(message, AssistantMessage)
    results = {m.call_id: m for m in messages[index + 1 :] if isinstance(m, ToolResultMessage)}
    deltas: list[StateDelta] = []
    for i, part in enumerate(message.tool_calls):
        tool, result = toolbox.get(part.name), results.get(part.id)
        if tool is None or not tool.client or result is None or result.is_error:
            continue
        call = Call(part.id, part.name, i, tool, CallState.OUTPUT_AVAILABLE)
        call.arguments, call.meta = split_meta(part.arguments)
        try:
            content = json.loads(result.content)
        except ValueError:  # a front end may answer with plain text
            content = result.content
        call.result = ToolResult(content)
        deltas += acts.after_result(call, state)
    return deltas


def result_messages(calls: list[Call]) -> list[ToolResultMessage]:
    """Each finished call's result, in call order (the model's order)."""
    return [
        ToolResultMessage(c.id, c.tool_name, c.model_text(), c.error is not None, c.model_files())
        for c in calls
        if c.done
    ]
