"""The rules every verifier applies once it has found what a claim answers.

A verifier's own work is finding the issued approval (a ledger entry, a signature, a
journal row) and refusing a claim it cannot find in its own words. From there the answer
is the same in every mode: a decision answers an approval and an answer a question
(``answer_mismatch``), a question's answer gets the question back as the server issued
it (its ``state`` is never the client's), and edited arguments pass ``checked_edit``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .._errors import Rejected
from ..call import Decision, strip_meta
from ..elicitation import InputAnswer
from ..messages import AssistantMessage, Message, ToolCallPart
from ._records import ApprovalClaim, EditRules, IssuedApproval


def answer_of(
    claim: ApprovalClaim, issued: IssuedApproval, edits: EditRules, *, validate: bool = True
) -> Decision | InputAnswer:
    """The claim's checked decision, or the answer to the question a call asked, with the
    question as the server issued it."""
    decision = claim.decision
    if isinstance(decision, InputAnswer) != (issued.request is not None):
        raise Rejected(
            f"{claim.approval_id!r} is answered the wrong way (an approval needs a decision, "
            "a question an answer)",
            "answer_mismatch",
        )
    if isinstance(decision, InputAnswer):
        content = decision.content if decision.action == "accept" else None
        return InputAnswer(decision.action, content, issued.request)
    return checked_edit(decision, issued, edits, validate=validate)


def checked_edit(
    decision: Decision, issued: IssuedApproval, edits: EditRules, *, validate: bool = True
) -> Decision:
    """The decision with its edited arguments, if any: refused where the tool does not
    allow edits (409 ``arguments_changed``, in every mode). Where it does, ``validate``
    checks them now (422 ``invalid_edit``: the journal, which keeps the decision for
    recovery); without, the run validates them like the model's arguments and an invalid
    edit is the call's "Invalid arguments" result. Runtime meta (``_outputPath``...) is
    not part of an edit, and arguments sent back unchanged are no edit."""
    if decision.arguments is None:
        return decision
    params = strip_meta(decision.arguments)
    if params == strip_meta(issued.arguments):
        return replace(decision, arguments=None)
    validator = edits.get(issued.tool_name)
    if validator is None:
        raise Rejected(
            f"the arguments of call {issued.call_id!r} were changed; {issued.tool_name} does "
            "not allow edits",
            "arguments_changed",
        )
    if not validate:
        return replace(decision, arguments=params)
    try:
        validator(params)
    except Exception as exc:  # the tool's own validation: its message is for the client
        raise Rejected(
            f"edited arguments for {issued.tool_name} are invalid: {exc}", "invalid_edit", 422
        ) from None
    return replace(decision, arguments=params)


def last_calls(messages: Sequence[Message]) -> list[ToolCallPart]:
    """The calls of the last assistant message: the only ones a claim may answer."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            return list(message.tool_calls)
    return []


def same_call(part: ToolCallPart, issued: IssuedApproval, fixed: dict[str, Any]) -> bool:
    """Whether the client's copy of a call is the call the approval was issued for: its
    tool and its arguments, less the runtime-filled meta ``fixed`` (which some protocols
    never carry back)."""
    if part.name != issued.tool_name:
        return False
    return _without(part.arguments, fixed) == _without(issued.arguments, fixed)


def _without(arguments: dict[str, Any], keys: dict[str, Any]) -> dict[str, Any]:
    if not keys:
        return arguments
    return {k: v for k, v in arguments.items() if k not in keys}
