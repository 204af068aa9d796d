"""From a decoded request to a started run: the client's answers checked by the verifier.

Without a journal, the endpoints' ``ApprovalVerifier`` (``callwright.approvals``: a
ledger in memory, or signed ids) turns the request's claims into decisions and names
the approvals the run asks for. With a journal, the journal owns the thread (history,
pending calls) and checks the answers with its own verifier in the transaction that
begins the segment; the client contributes only new user messages and answers. A
refusal is the verifier's ``Rejected``, answered with its status and code.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic

from .._journaled import begin_segment
from .._run_start import RunStart
from ..approvals import Asked, Rejected
from ..context import DepsT
from ..run import Run
from ..store import Journal, Recorder, database_errors
from ..store._verify import claim_answer
from ..toolbox import CLIENT_TOOL_CONFLICT
from ..wire import RunInput, WireError
from ..wire._base import SSEEncoder
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


async def start_run(
    endpoints: Endpoints[DepsT], request: RunRequest[DepsT]
) -> tuple[Run[DepsT, Any], Recorder | None]:
    """The run a request asks for (with its journal recorder), or a ``WireError``.

    Async for the journal: its check and new segment run on the journal's writer
    thread, never on the event loop. The request's data only goes down from here: what
    the server holds (the thread's remembered approvals, its tools' names) is read
    first, then the start is handed to the layers below.
    """
    _check_request(endpoints, request.input)
    if endpoints.journal is None:
        return _start_in_memory(endpoints, request), None
    return await _start_journaled(endpoints, endpoints.journal, request)


def refused(exc: Rejected) -> WireError:
    """A verifier's or the journal's refusal, as the server answers it."""
    return WireError(exc.message, exc.code, exc.status)


def _check_request(endpoints: Endpoints[Any], run_input: RunInput) -> None:
    """Refusals that must come before any approval is used up."""
    if run_input.client_tools and not endpoints.allow_client_override:
        taken = endpoints.agent.toolbox.server_tool_names()
        for tool in run_input.client_tools:
            if tool.name in taken:
                raise WireError(CLIENT_TOOL_CONFLICT.format(tool.name), "tool_conflict", 409)
    most = endpoints.limits.max_messages
    if len(run_input.messages) > most:
        raise WireError(
            f"too many messages ({len(run_input.messages)} > {most})", "too_many_messages", 413
        )


def _start_in_memory(endpoints: Endpoints[DepsT], request: RunRequest[DepsT]) -> Run[DepsT, Any]:
    """The endpoints' verifier turns the request's claims into decisions; the thread's
    remembered approvals are this process's."""
    run_input = request.input
    # A new thread's id is made here, not by the run, so that the approvals it asks for
    # are bound to the thread the client will see.
    principal = request.principal
    thread_id = run_input.thread_id or f"thread_{uuid.uuid4().hex}"
    thread_approvals = endpoints._threads.approvals.of(principal, thread_id)
    verifier = endpoints._verifier
    asked = Asked(principal, thread_id, run_input.messages, endpoints.agent.toolbox)
    try:
        decisions = verifier.verify(run_input.claims, asked)
    except Rejected as exc:
        raise refused(exc) from None
    start = replace(
        run_input.run_start(),
        decisions=decisions,
        allow_client_override=endpoints.allow_client_override,
        thread_id=thread_id,
        approval_ids=verifier.approval_ids(principal, thread_id),
        thread_approvals=thread_approvals,
        principal=principal,
    )
    return endpoints.agent.start_from(start, deps=request.deps)


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
    if not run_input.thread_id:
        raise WireError("a thread id is required (threadId / id)", "missing_thread_id")
    answers = [claim_answer(claim) for claim in run_input.claims]
    start = replace(
        run_input.run_start(),
        allow_client_override=endpoints.allow_client_override,
        run_id=run_input.run_id or f"req_{uuid.uuid4().hex}",
        principal=request.principal,
    )
    spec = _segment_spec(endpoints, start, request.encoder)
    encoder = request.encoder
    closing = b"" if encoder is None else encoder.cut_short(INTERRUPTED, "interrupted")
    try:
        run, recorder = await begin_segment(
            journal, endpoints.agent, start, answers, deps=request.deps, closing=closing, spec=spec
        )
    except Rejected as exc:
        raise refused(exc) from None
    except database_errors() as exc:
        raise journal_unavailable(exc) from None
    return run, recorder


def _segment_spec(endpoints: Endpoints[Any], start: RunStart, encoder: SSEEncoder | None) -> str:
    """With a durable runtime, what another replica needs to continue the segment if
    this process dies, made from the run's start: the journal writes it with the
    segment ("" without one)."""
    if endpoints.durable is None or encoder is None:
        return ""
    from ..durable._segment import SegmentSpec, spec_of_encoder, tool_definitions

    return SegmentSpec(
        request_id=start.run_id or "",
        thread_id=start.thread_id or "",
        principal=start.principal or "",
        client_tools=tool_definitions(list(start.client_tools)),
        allow_client_override=start.allow_client_override,
        forwarded_props=dict(start.forwarded_props or {}),
        **spec_of_encoder(encoder),
    ).to_json()


def journal_unavailable(exc: BaseException) -> WireError:
    """503 for a journal (or DBOS) database that cannot be used: the class only, since a
    driver's text may name the host."""
    return WireError(
        f"the run journal is unavailable ({type(exc).__name__}); try again later",
        "journal_unavailable",
        503,
    )
