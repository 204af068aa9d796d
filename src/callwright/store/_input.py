"""What a request adds to a journaled thread: new user messages and answers.

The client's copy of the history is not trusted: only its trailing user messages
are new; its client-tool results become answers that the journal checks against
the calls it is waiting on. A new thread may start from the client's history,
minus any call the journal never issued.
"""

from __future__ import annotations

from ..messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from .base import Answer, Rejected


def split_request(
    history: list[Message], waiting: bool, messages: list[Message], answers: list[Answer]
) -> tuple[list[Message], list[Answer], int | None]:
    """The new messages, every answer (``answers``, then the client results found in
    ``messages``), and where the history is cut back to (None: nowhere); ``waiting`` is
    whether the thread has pending calls.

    A new user message whose id the history already holds was sent again: the client
    regenerates the answer (the AI SDK's ``regenerate()``), retries a request, or edits
    the message. Its copy of the conversation ends there, so the history is cut back to
    that message, and the client's version of it (and of any after it) takes its place:
    the answers it discarded go, and the question is stored once. A request that
    answers pending calls cuts nothing (its messages continue the history).
    """
    new: list[Message] = []
    for message in reversed(messages):
        if not isinstance(message, UserMessage):
            break
        new.insert(0, message)
    if not history and not waiting:
        new = _first_request(messages[: len(messages) - len(new)]) + new
    known = {m.call_id for m in history if isinstance(m, ToolResultMessage)}
    answers = list(answers)
    for message in messages:
        if isinstance(message, ToolResultMessage) and message.call_id not in known:
            answers.append(
                Answer(
                    "client",
                    message.call_id,
                    tool_name=message.tool_name or None,
                    result=message.content,
                    is_error=message.is_error,
                )
            )
    if not answers:
        return new, answers, _resent(history, new)
    ids = {m.id for m in history if isinstance(m, UserMessage) and m.id is not None}
    return [m for m in new if not isinstance(m, UserMessage) or m.id not in ids], answers, None


def _resent(history: list[Message], new: list[Message]) -> int | None:
    """The history's position of the earliest of ``new`` it already holds, by id."""
    ids = {m.id for m in new if isinstance(m, UserMessage) and m.id is not None}
    if not ids:
        return None
    return next(
        (i for i, m in enumerate(history) if isinstance(m, UserMessage) and m.id in ids), None
    )


def _first_request(prior: list[Message]) -> list[Message]:
    """A new thread may start from a client's history, but not from results of calls the
    journal never issued: those are refused, and the calls themselves dropped."""
    orphan = next((m for m in prior if isinstance(m, ToolResultMessage)), None)
    if orphan is not None:
        raise Rejected(f"no call {orphan.call_id!r} was issued in this thread", "unknown_call", 404)
    return [m for m in prior if not isinstance(m, AssistantMessage) or not m.tool_calls]
