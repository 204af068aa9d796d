"""``Endpoints``: the server's request handlers, for any Starlette or FastAPI app.

One object holds what an app configures once (the agent, the journal or the
approval ledger or signer, request limits); its ``handle_*`` methods are plain
Starlette handlers (``Request`` in, ``Response`` out). What differs per request
(the caller's ``deps`` and ``principal``) is passed to each call, so an app's
own authentication and dependency injection decide them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Generic

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse

from ..context import DepsT
from ..playground import PAGE, SCRIPT, asset
from ..run import Agent
from ..store import ApprovalSigner, Journal
from ..wire import ApprovalLedger, MemoryApprovalLedger, WireError, agui, aisdk
from ._body import ServerLimits, read_json
from ._responses import RUN_ID_HEADER, RunStream, refusal, replay
from ._start import RunRequest, start_run

# The page and its bundle change with each release; a stale cached copy would speak to a
# newer server.
NO_CACHE = {"cache-control": "no-cache"}


@dataclass(eq=False)
class Endpoints(Generic[DepsT]):
    """callwright's HTTP endpoints for one agent, to mount in any Starlette/FastAPI app.

    ``create_app`` mounts them at ``POST /agui``, ``POST /api/chat``,
    ``GET /runs/{run_id}/events``, ``GET /`` and ``GET /playground.js``. In your own
    app, call them from your routes after your own authentication::

        endpoints = Endpoints(agent, journal=SQLiteJournal("runs.db"))
        app = FastAPI(lifespan=endpoints.lifespan)

        @app.post("/agui")
        async def agui(request: Request, user: User = Depends(current_user)) -> Response:
            return await endpoints.handle_agui(request, deps=Deps(user), principal=user.id)

    Refusals are 4xx JSON bodies ``{"error": {"message", "code"}}``; a front-end
    tool named like a server tool is refused with 409 ``tool_conflict`` unless
    ``allow_client_override``. With a ``journal`` the server keeps each thread's
    history, pending calls and events durably, trusts its journal over the
    client's copy, and honours an answer only for a call it is waiting on.
    Without one, ``signer`` makes approvals stateless (signed approval ids: no
    database, but no replay protection), and otherwise ``ledger`` remembers
    issued approvals in memory.
    """

    agent: Agent[DepsT, Any]
    """The agent every request runs."""
    _: KW_ONLY
    journal: Journal | None = None
    """The durable run journal (``callwright serve --db``); None keeps runs in memory."""
    signer: ApprovalSigner | None = None
    """Signs approval ids so that no server state is needed (not with a journal)."""
    ledger: ApprovalLedger = field(default_factory=MemoryApprovalLedger)
    """The approvals issued and not yet answered, when there is no journal or signer."""
    limits: ServerLimits = field(default_factory=ServerLimits)
    """Request size limits."""
    allow_client_override: bool = False
    """Whether a front-end tool may replace a server tool of the same name."""
    ai_sdk_version: int = 6
    """The ``ai`` major version assumed when a request has no ``x-ai-sdk-version``."""

    def __post_init__(self) -> None:
        if self.journal is not None and self.signer is not None:
            raise ValueError("use a journal or a signer, not both")
        if self.ai_sdk_version not in aisdk.SUPPORTED_VERSIONS:
            raise ValueError(f"ai_sdk_version must be one of {aisdk.SUPPORTED_VERSIONS}")

    async def handle_agui(
        self, request: Request, *, deps: DepsT | None = None, principal: str | None = None
    ) -> Response:
        """``POST`` an AG-UI ``RunAgentInput``: the run's AG-UI event stream.

        ``deps`` reach the tools as ``ToolContext.deps`` (None: the agent's own);
        ``principal`` names the authenticated caller (None: the app has no users).
        Threads and runs are not yet owned by a principal: any caller who knows a
        thread or run id can continue or replay it.
        """
        try:
            body = await read_json(request, self.limits)
            run_request = RunRequest(agui.decode_request(body), deps, principal)
            run, recorder = start_run(self, run_request)
        except WireError as exc:
            return refusal(exc)
        encoder = agui.AGUIEncoder(protocol_1=agui.wants_protocol_1(body))
        return RunStream(run, encoder, self.ledger, recorder)

    async def handle_chat(
        self, request: Request, *, deps: DepsT | None = None, principal: str | None = None
    ) -> Response:
        """``POST`` an AI SDK ``useChat`` body: the run's UI message stream.

        ``deps`` and ``principal`` as for ``handle_agui``.
        """
        try:
            version = aisdk.client_version(request.headers, self.ai_sdk_version)
            body = await read_json(request, self.limits)
            run, recorder = start_run(self, RunRequest(aisdk.decode_request(body), deps, principal))
        except WireError as exc:
            return refusal(exc)
        encoder = aisdk.AISDKEncoder(version=version, message_id=aisdk.continued_message_id(body))
        return RunStream(run, encoder, self.ledger, recorder)

    async def handle_replay(
        self, request: Request, *, run_id: str | None = None, principal: str | None = None
    ) -> Response:
        """``GET`` a journaled run's frames after the first ``?after=N``, then its live ones:
        how a client resumes a dropped stream.

        ``run_id`` defaults to the route's ``{run_id}`` path parameter; ``principal``
        as for ``handle_agui``.
        """
        if self.journal is None:
            return refusal(WireError("no journal: start the server with --db", "no_journal", 404))
        try:
            after = int(request.query_params.get("after", "0"))
        except ValueError:
            after = -1
        if after < 0:
            return refusal(WireError("after must be a non-negative integer", "invalid_request"))
        segment = run_id if run_id is not None else str(request.path_params.get("run_id", ""))
        if not self.journal.has_events(segment):
            return refusal(WireError(f"no run {segment!r} in the journal", "unknown_run", 404))
        return StreamingResponse(
            replay(self.journal, segment, after),
            headers={**agui.AGUIEncoder.headers, RUN_ID_HEADER: segment},
        )

    async def handle_page(self, request: Request) -> Response:
        """``GET`` the playground page. It loads ``/playground.js`` and talks to ``/agui``
        at the root of the site, so mount both there."""
        return HTMLResponse(asset(PAGE), headers=NO_CACHE)

    async def handle_page_script(self, request: Request) -> Response:
        """``GET`` the playground page's script."""
        return Response(asset(SCRIPT), media_type="text/javascript", headers=NO_CACHE)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: object) -> AsyncIterator[None]:
        """For ``Starlette(lifespan=...)`` or ``FastAPI(lifespan=...)``: settle the runs a
        previous process left unfinished before serving, close the journal after."""
        self.recover()
        try:
            yield
        finally:
            self.close()

    def recover(self) -> list[str]:
        """Settle the journal's interrupted runs (tools marked idempotent run again);
        returns their ids. Call it before serving when not using ``lifespan``."""
        if self.journal is None:
            return []
        return self.journal.recover({t.name for t in self.agent.toolbox if t.idempotent})

    def close(self) -> None:
        """Close the journal (nothing to do without one)."""
        if self.journal is not None:
            self.journal.close()
