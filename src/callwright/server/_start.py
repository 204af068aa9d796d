"""From a decoded request to a started run, in the server's three approval modes.

In memory, an approval claim is honoured only if the ledger issued it; with a
signer, only if its id carries our signature for that exact call; with a
journal, the journal owns the thread (history, pending calls) and the client
contributes only new user messages and answers, which the journal checks.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic

from ..call import Decision
from ..context import DepsT
from ..messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from ..run import Run
from ..store import Answer, ApprovalSigner, Journal, Recorder, Rejected, start_journaled
from ..toolbox import ToolConflict
from ..wire import ApprovalClaim, RunInput, WireError, resolve_claims

if TYPE_CHECKING:
    from ._endpoints import Endpoints


@dataclass(frozen=True, slots=True)
class RunRequest(Generic[DepsT]):
    """One decoded request and who sent it."""

    input: RunInput
    """What the protocol decoder made of the body; approvals still unverified."""
    deps: DepsT | None = None
    """The run's dependencies (``ToolContext.deps``); None means the agent's own."""
    principal: str | None = None
    """Who sent the request, as the app authenticated them; None when it does not."""


def start_run(
    endpoints: Endpoints[DepsT], request: RunRequest[DepsT]
) -> tuple[Run[DepsT, Any], Recorder | None]:
    """The run a request asks for (with its journal recorder), or a ``WireError``."""
    run_input = request.input
    _check_request(endpoints, run_input)
    if endpoints.journal is not None:
        return _start_journaled(endpoints, endpoints.journal, request)
    signer = endpoints.signer
    if signer is not None:
        decisions = resolve_signed_claims(run_input.claims, run_input.messages, signer)
    else:
        decisions = resolve_claims(
            run_input.claims, run_input.messages, endpoints.ledger, endpoints.agent.toolbox
        )
    run = endpoints.agent.start(
        None,
        messages=run_input.messages,
        decisions=decisions,
        client_tools=run_input.client_tools,
        allow_client_override=endpoints.allow_client_override,
        state=run_input.state,
        deps=request.deps,
        run_id=run_input.run_id,
        thread_id=run_input.thread_id,
        approval_ids=signer.new_id if signer is not None else None,
    )
    return run, None


def _check_request(endpoints: Endpoints[Any], run_input: RunInput) -> None:
    """Refusals that must come before any approval is used up."""
    if run_input.client_tools:
        try:
            endpoints.agent.toolbox.with_client_tools(
                run_input.client_tools, allow_override=endpoints.allow_client_override
            )
        except ToolConflict as exc:
            raise WireError(str(exc), "tool_conflict", 409) from None
    most = endpoints.limits.max_messages
    if len(run_input.messages) > most:
        raise WireError(
            f"too many messages ({len(run_input.messages)} > {most})", "too_many_messages", 413
        )


def _start_journaled(
    endpoints: Endpoints[DepsT], journal: Journal, request: RunRequest[DepsT]
) -> tuple[Run[DepsT, Any], Recorder]:
    run_input = request.input
    thread_id = run_input.thread_id
    if not thread_id:
        raise WireError("a thread id is required (threadId / id)", "missing_thread_id")
    try:
        return start_journaled(
            journal,
            endpoints.agent,
            thread_id,
            run_input.run_id or f"req_{uuid.uuid4().hex}",
            *journal_input(journal, thread_id, run_input),
            client_tools=run_input.client_tools,
            allow_client_override=endpoints.allow_client_override,
            state=run_input.state,
            deps=request.deps,
        )
    except Rejected as exc:
        raise WireError(exc.message, exc.code, exc.status) from None


def resolve_signed_claims(
    claims: list[ApprovalClaim], messages: list[Message], signer: ApprovalSigner
) -> dict[str, Decision]:
    """Decisions whose approval id carries our signature for a call of the last reply."""
    calls = next((m.tool_calls for m in reversed(messages) if isinstance(m, AssistantMessage)), [])
    decisions: dict[str, Decision] = {}
    for claim in claims:
        match = next(
            (
                part
                for part in calls
                if claim.call_id in (None, part.id)
                and signer.check_id(claim.approval_id, part.id, part.name, part.arguments)
            ),
            None,
        )
        if match is None:
            raise WireError(
                f"approval {claim.approval_id!r} is not signed by this server for a call "
                "of the last assistant message (or its arguments changed)",
                "bad_signature",
                403,
            )
        decisions[match.id] = claim.decision
    return decisions


def journal_input(
    store: Journal, thread_id: str, run_input: RunInput
) -> tuple[list[Message], list[Answer]]:
    """What a request adds to a journaled thread: new user messages and answers.

    The client's copy of the history is not trusted: only its trailing user
    messages are new; its approvals and client-tool results become answers that
    the journal checks against the calls it is waiting on.
    """
    messages = run_input.messages
    new: list[Message] = []
    for message in reversed(messages):
        if not isinstance(message, UserMessage):
            break
        new.insert(0, message)
    if not store.history(thread_id) and not store.pending(thread_id):
        new = _first_request(messages[: len(messages) - len(new)]) + new
    answers = [
        Answer(
            "approval",
            claim.call_id,
            claim.approval_id,
            claim.decision.approved,
            claim.decision.reason,
            arguments=claim.decision.arguments,
        )
        for claim in run_input.claims
    ]
    known = {m.call_id for m in store.history(thread_id) if isinstance(m, ToolResultMessage)}
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
    return new, answers


def _first_request(prior: list[Message]) -> list[Message]:
    """A new thread may start from a client's history, but not from results of calls the
    journal never issued: those are refused, and the calls themselves dropped."""
    orphan = next((m for m in prior if isinstance(m, ToolResultMessage)), None)
    if orphan is not None:
        raise WireError(
            f"no call {orphan.call_id!r} was issued in this thread", "unknown_call", 404
        )
    return [m for m in prior if not isinstance(m, AssistantMessage) or not m.tool_calls]
