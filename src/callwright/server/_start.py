"""From a decoded request to a started run, in the server's three approval modes.

In memory, an approval claim is honoured only if the ledger issued it to the
same principal in the same thread; with a signer, only if its id carries our
signature for that exact call, principal and thread; with a journal, the
journal owns the thread (history, pending calls) and the client contributes
only new user messages and answers, which the journal checks. Edited arguments
get one answer in every mode (``wire._common.checked_edit``).
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic

from ..call import Decision
from ..context import DepsT
from ..elicitation import InputAnswer
from ..messages import AssistantMessage, Message
from ..run import Run
from ..store import (
    Answer,
    ApprovalSigner,
    Journal,
    Recorder,
    Rejected,
    begin_journaled,
    database_errors,
)
from ..toolbox import Toolbox, ToolConflict
from ..wire import ApprovalClaim, RunInput, WireError, resolve_claims
from ..wire._base import SSEEncoder
from ..wire._common import checked_edit
from ._responses import INTERRUPTED

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
    encoder: SSEEncoder | None = None
    """The stream's encoder: with a journal, it makes the frame that ends a replay of
    the run if the run never finishes (the server killed mid-run)."""
    spec: str = ""
    """With a durable runtime, the segment's ``SegmentSpec`` as JSON: the journal keeps
    it with the segment, for the replica that continues it if this process dies."""


async def start_run(
    endpoints: Endpoints[DepsT], request: RunRequest[DepsT]
) -> tuple[Run[DepsT, Any], Recorder | None]:
    """The run a request asks for (with its journal recorder), or a ``WireError``.

    Async for the journal: its check and new segment run on the journal's writer
    thread, never on the event loop.
    """
    run_input = request.input
    _check_request(endpoints, run_input)
    if endpoints.journal is not None:
        return await _start_journaled(endpoints, endpoints.journal, request)
    signer = endpoints.signer
    # A new thread's id is made here, not by the run, so that the approvals it asks for
    # are bound to the thread the client will see.
    principal = request.principal
    thread_id = run_input.thread_id or f"thread_{uuid.uuid4().hex}"
    claims, messages, toolbox = run_input.claims, run_input.messages, endpoints.agent.toolbox
    if signer is not None:
        # answers to a tool's questions are kept in the ledger even with a signer
        answers = [c for c in claims if isinstance(c.decision, InputAnswer)]
        claims = [c for c in claims if not isinstance(c.decision, InputAnswer)]
        decisions: dict[str, Decision | InputAnswer] = {}
        decisions |= resolve_signed_claims(
            claims, messages, signer, toolbox, principal=principal, thread_id=thread_id
        )
        decisions |= resolve_claims(
            answers, messages, endpoints.ledger, toolbox, principal=principal, thread_id=thread_id
        )
    else:
        decisions = resolve_claims(
            claims, messages, endpoints.ledger, toolbox, principal=principal, thread_id=thread_id
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
        thread_id=thread_id,
        approval_ids=(
            functools.partial(signer.new_id, principal=principal, thread_id=thread_id)
            if signer is not None
            else None
        ),
        thread_approvals=endpoints._threads.approvals.of(principal, thread_id),
        principal=principal,
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


async def _start_journaled(
    endpoints: Endpoints[DepsT], journal: Journal, request: RunRequest[DepsT]
) -> tuple[Run[DepsT, Any], Recorder]:
    """The journal owns the thread: its history and state, its pending calls, who it
    belongs to (``request.principal``, ``""`` without authentication) and whether a
    run is going on in it. The client's messages contribute new user messages and
    client-tool results, its claims become answers the journal checks, and its
    ``state`` is taken only for a new thread. The thread's remembered approvals
    (``remember: "thread"``) come from the journal too, so that they survive a restart
    and hold on every replica: the in-process memory is not used here."""
    run_input = request.input
    thread_id = run_input.thread_id
    if not thread_id:
        raise WireError("a thread id is required (threadId / id)", "missing_thread_id")
    answers = [_answer(claim) for claim in run_input.claims]
    try:
        run, recorder = await begin_journaled(
            journal,
            endpoints.agent,
            thread_id,
            run_input.run_id or f"req_{uuid.uuid4().hex}",
            run_input.messages,
            answers,
            client_tools=run_input.client_tools,
            allow_client_override=endpoints.allow_client_override,
            state=run_input.state,
            deps=request.deps,
            principal=request.principal or "",
            closing=_closing_frame(request.encoder),
            spec=request.spec,
        )
    except Rejected as exc:
        raise WireError(exc.message, exc.code, exc.status) from None
    except database_errors() as exc:
        raise journal_unavailable(exc) from None
    return run, recorder


def journal_unavailable(exc: BaseException) -> WireError:
    """503 for a journal (or DBOS) database that cannot be used: the class only, since a
    driver's text may name the host."""
    return WireError(
        f"the run journal is unavailable ({type(exc).__name__}); try again later",
        "journal_unavailable",
        503,
    )


def _answer(claim: ApprovalClaim) -> Answer:
    """A claim as the journal checks it: an approval's decision (with its ``data`` and
    ``remember``, which the journal keeps), or the answer to a tool's question."""
    answer = claim.decision
    if isinstance(answer, InputAnswer):
        return Answer(
            "input", claim.call_id, claim.approval_id, action=answer.action, content=answer.content
        )
    return Answer(
        "approval",
        claim.call_id,
        claim.approval_id,
        answer.approved,
        answer.reason,
        arguments=answer.arguments,
        data=answer.data,
        remember=answer.remember,
    )


def _closing_frame(encoder: SSEEncoder | None) -> bytes:
    if encoder is None:
        return b""
    return encoder.error(INTERRUPTED, "interrupted") + encoder.close()


def resolve_signed_claims(
    claims: list[ApprovalClaim],
    messages: list[Message],
    signer: ApprovalSigner,
    toolbox: Toolbox,
    *,
    principal: str | None = None,
    thread_id: str | None = None,
) -> dict[str, Decision]:
    """Decisions whose approval id carries our signature for a call of the last reply,
    asked of this principal in this thread (another's is refused like a forgery)."""
    calls = next((m.tool_calls for m in reversed(messages) if isinstance(m, AssistantMessage)), [])
    decisions: dict[str, Decision] = {}
    for claim in claims:
        match = next(
            (
                part
                for part in calls
                if claim.call_id in (None, part.id)
                and signer.check_id(
                    claim.approval_id,
                    part.id,
                    part.name,
                    part.arguments,
                    principal=principal,
                    thread_id=thread_id,
                )
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
        if isinstance(claim.decision, InputAnswer):  # answers to questions go to the ledger
            raise WireError(f"{claim.approval_id!r} is not an approval", "answer_mismatch", 409)
        decisions[match.id] = checked_edit(claim.decision, match.name, match.arguments, toolbox)
    return decisions
