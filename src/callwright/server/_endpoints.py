"""``Endpoints``: the server's request handlers, for any Starlette or FastAPI app.

One object holds what an app configures once (the agent, the journal or the
approval ledger or signer, request limits, who may call and from where); its
``handle_*`` methods are plain Starlette handlers (``Request`` in, ``Response``
out). Who the caller is and what their tools get come either from the hooks
configured here (``authenticate``, ``deps_factory``) or from the app's own
authentication and dependency injection, passed to each call.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, Generic

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from .._errors import warn_deprecated
from ..approvals import (
    ApprovalLedger,
    ApprovalVerifier,
    Issuer,
    LedgerVerifier,
    MemoryApprovalLedger,
    SignedVerifier,
)
from ..artifacts import JournalArtifactStore
from ..context import DepsT
from ..playground import PAGE, SCRIPT, asset
from ..run import Agent
from ..store import ApprovalSigner, Journal, database_errors
from ..wire import RunInput, WireError, agui, aisdk
from ..wire._base import SSEEncoder
from ..wire._common import client_id
from ._artifacts import serve_artifact
from ._body import ServerLimits, decode_agui, decode_chat, read_json
from ._cancel import LiveRuns, cancel_requests
from ._health import Readiness
from ._responses import RunStream, refusal, replay_response
from ._security import (
    Authenticate,
    Gate,
    call_hook,
    page_headers,
    unauthorized,
)
from ._start import RunRequest, journal_unavailable, start_run
from ._threads import RunningThreads

if TYPE_CHECKING:
    from ..durable import DurableRuntime

DepsFactory = Callable[[Request, "str | None"], "DepsT | Awaitable[DepsT]"]
"""``deps_factory(request, principal)``: the run's ``ToolContext.deps``. Sync or async.
With a durable runtime it is also called as ``deps_factory(None, principal)`` for a run
that a replica continues without its request: make the deps from the principal alone
there."""

# The page and its bundle change with each release; a stale cached copy would speak to a
# newer server.
NO_CACHE = {"cache-control": "no-cache"}
# A probe's answer is about this moment only.
NO_STORE = {"cache-control": "no-store"}


@dataclass(frozen=True, slots=True)
class _Caller(Generic[DepsT]):
    principal: str | None
    deps: DepsT | None


@dataclass(eq=False)
class Endpoints(Generic[DepsT]):
    """callwright's HTTP endpoints for one agent, to mount in any Starlette/FastAPI app.

    ``create_app`` mounts them at ``POST /agui``, ``POST /api/chat``,
    ``GET /api/chat/{chat_id}/stream``, ``GET /runs/{run_id}/events``,
    ``GET /runs/{run_id}/artifacts/{artifact_id}``,
    ``POST /runs/{run_id}/calls/{call_id}/cancel``, ``GET /``,
    ``GET /playground.js`` (and ``OPTIONS`` for CORS preflights), and the probes
    ``GET /healthz`` and ``GET /readyz``. In your own app,
    either give them your ``authenticate`` and ``deps_factory`` hooks, or call them from
    your routes after your own authentication::

        endpoints = Endpoints(agent, journal=SQLiteJournal("runs.db"))
        app = FastAPI(lifespan=endpoints.lifespan)

        @app.post("/agui")
        async def agui(request: Request, user: User = Depends(current_user)) -> Response:
            return await endpoints.handle_agui(request, deps=Deps(user), principal=user.id)

    Every approval, thread and run belongs to the principal whose request made it;
    another principal is answered as if it did not exist. One thread runs one
    request at a time (another gets 409 ``thread_busy``). Each handler checks the
    ``Host``, the ``Origin`` and the content type itself (see ``_security``), so
    that they hold without middleware.

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
    """The durable run journal (``callwright serve --journal``); None keeps runs in memory."""
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
    authenticate: Authenticate | None = None
    """``authenticate(request) -> principal | None`` (sync or async), asked when a handler
    is not given a ``principal``; None refuses the request with 401. Without it every
    caller is the same anonymous principal. The playground page stays public (it is
    static; it asks for a token when the endpoints refuse it)."""
    deps_factory: DepsFactory[DepsT] | None = None
    """``deps_factory(request, principal)`` (sync or async): the run's ``ToolContext.deps``,
    when a handler is not given ``deps``. None: the agent's own. With ``durable``, a
    replica that continues another's run calls ``deps_factory(None, principal)`` (the
    principal the journal kept with the run): derive the deps from the principal, not
    from the request, so that a run gets the same deps on every replica."""
    allowed_origins: Sequence[str] = ()
    """Origins (``https://app.example.com``) besides the server's own whose pages may
    call the endpoints; their requests get CORS headers, and preflights a 204."""
    allowed_hosts: Sequence[str] | None = None
    """The ``Host`` names served (``name``, ``name:port``, ``*.domain``, ``*`` for any).
    None: a request that arrives on a loopback address must name ``localhost``,
    ``127.0.0.1`` or ``[::1]`` (stops DNS rebinding); others are not checked."""
    durable: DurableRuntime | None = None
    """Continues the segments of replicas that died: each journaled segment is begun with
    its spec, so that another replica continues it if this process dies (``callwright
    serve --journal postgresql://…``); needs a journal on the same database. The
    lifespan launches and closes it."""
    _gate: Gate = field(init=False, repr=False)
    _verifier: ApprovalVerifier = field(init=False, repr=False)
    _threads: RunningThreads = field(init=False, repr=False)
    _live: LiveRuns = field(init=False, repr=False)
    _readiness: Readiness = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.journal is not None and self.signer is not None:
            raise ValueError("use a journal or a signer, not both")
        if self.durable is not None and self.journal is None:
            raise ValueError("a durable runtime needs the journal it shares its database with")
        if self.ai_sdk_version not in aisdk.SUPPORTED_VERSIONS:
            raise ValueError(f"ai_sdk_version must be one of {aisdk.SUPPORTED_VERSIONS}")
        self._gate = Gate.of(self.allowed_origins, self.allowed_hosts)
        self._verifier = (
            SignedVerifier(self.signer, self.ledger)
            if self.signer is not None
            else LedgerVerifier(self.ledger)
        )
        self._threads = RunningThreads()
        self._live = LiveRuns(cancel_requests(self.journal), self.limits.cancel_poll_seconds)
        self._readiness = Readiness(self.agent, self.journal, self.durable)
        if self.durable is not None and self.durable.deps_factory is None:
            self.durable.deps_factory = self.deps_factory
        if self.durable is not None and self.durable.on_continue is None:
            self.durable.on_continue = self._live.watch
        artifacts = self.agent.artifacts
        if artifacts is not None and artifacts.store is None and self.journal is not None:
            artifacts.store = JournalArtifactStore(self.journal)

    async def handle_agui(
        self, request: Request, *, deps: DepsT | None = None, principal: str | None = None
    ) -> Response:
        """``POST`` an AG-UI ``RunAgentInput``: the run's AG-UI event stream.

        ``deps`` reach the tools as ``ToolContext.deps`` (None: ``deps_factory``'s,
        else the agent's own); ``principal`` names the authenticated caller (None:
        ``authenticate``'s, else the app has no users).
        """
        try:
            caller = await self._admit(request, deps, principal, body=True)
            body = await read_json(request, self.limits)
            encoder = agui.AGUIEncoder(
                protocol_1=agui.wants_protocol_1(body),
                protocol_version=agui.protocol_version(body),
                strip_paths=True,
            )
            run_input = await decode_agui(body, self.limits)
            return await self._run(request, caller, run_input, encoder)
        except WireError as exc:
            return self._refuse(request, exc)

    async def handle_ai_sdk(
        self, request: Request, *, deps: DepsT | None = None, principal: str | None = None
    ) -> Response:
        """``POST`` an AI SDK ``useChat`` body: the run's UI message stream.

        ``deps`` and ``principal`` as for ``handle_agui``.
        """
        try:
            caller = await self._admit(request, deps, principal, body=True)
            version = aisdk.client_version(request.headers, self.ai_sdk_version)
            body = await read_json(request, self.limits)
            run_input = await decode_chat(body, self.limits)
            message_id = aisdk.continued_message_id(body)
            encoder = aisdk.AISDKEncoder(version=version, message_id=message_id, strip_paths=True)
            return await self._run(request, caller, run_input, encoder)
        except WireError as exc:
            return self._refuse(request, exc)

    async def handle_replay(
        self, request: Request, *, run_id: str | None = None, principal: str | None = None
    ) -> Response:
        """``GET`` a journaled run's frames after the first ``?after=N``, then its live ones:
        how a client resumes a dropped stream.

        ``run_id`` defaults to the route's ``{run_id}`` path parameter; ``principal``
        as for ``handle_agui``.
        """
        try:
            principal = await self._principal(request, principal, body=False)
            segment = run_id if run_id is not None else str(request.path_params.get("run_id", ""))
            client_id(segment, "the run id")
        except WireError as exc:
            return self._refuse(request, exc)
        if self.journal is None:
            error = WireError("no journal: start the server with --journal", "no_journal", 404)
            return self._refuse(request, error)
        try:
            after = int(request.query_params.get("after", "0"))
        except ValueError:
            after = -1
        if after < 0:
            error = WireError("after must be a non-negative integer", "invalid_request")
            return self._refuse(request, error)
        headers = self._headers(request)
        try:
            return await replay_response(
                self.journal,
                segment,
                after,
                principal or "",
                headers,
                agui.AGUIEncoder,
                self.limits.heartbeat_seconds,
            )
        except WireError as exc:
            return self._refuse(request, exc)
        except database_errors() as exc:
            return self._refuse(request, journal_unavailable(exc))

    async def handle_artifact(
        self,
        request: Request,
        *,
        run_id: str | None = None,
        artifact_id: str | None = None,
        principal: str | None = None,
    ) -> Response:
        """``GET`` an artifact's bytes (a result too large for the model, see
        ``callwright.artifacts``): the ``url`` of a tool result's ``artifact``. Only the
        principal whose run made it gets it; another principal, an unknown or expired id
        and a run that did not make it all get the same 404 ``artifact_not_found``.
        ``run_id`` and ``artifact_id`` default to the route's path parameters."""
        try:
            principal = await self._principal(request, principal, body=False)
            params = request.path_params
            run = run_id if run_id is not None else str(params.get("run_id", ""))
            artifact = artifact_id if artifact_id is not None else str(params.get("artifact_id"))
            client_id(run, "the run id")
        except WireError as exc:
            return self._refuse(request, exc)
        found = await serve_artifact(self.agent.artifacts, run, artifact, principal or "")
        if found is None:
            error = WireError("no such artifact", "artifact_not_found", 404)
            return self._refuse(request, error)
        return Response(
            found.data,
            media_type=found.media_type,
            headers={**self._headers(request), **found.headers},
        )

    async def handle_cancel_call(
        self,
        request: Request,
        *,
        run_id: str | None = None,
        call_id: str | None = None,
        principal: str | None = None,
    ) -> Response:
        """``POST /runs/{run_id}/calls/{call_id}/cancel``: stop one running call and let its
        run go on (``Run.cancel_call``). 202 ``{"cancelled": true}``: the call's token has
        fired, and its result (``Cancelled: cancelled by the user``) comes on the run's
        stream once its tool has stopped. 409 ``call_finished`` for a call that is not
        running; 404 ``unknown_call`` for an unknown run or call and for another
        principal's run. With a journal the run may stream on another replica: the
        request is checked against the journal and that replica stops the call within
        ``ServerLimits.cancel_poll_seconds``. ``run_id`` and
        ``call_id`` default to the route's path parameters."""
        try:
            principal = await self._principal(request, principal, body=True)
            params = request.path_params
            run = run_id if run_id is not None else str(params.get("run_id", ""))
            call = call_id if call_id is not None else str(params.get("call_id", ""))
            client_id(run, "the run id")
            client_id(call, "the call id")
            await self._live.cancel_call(principal, run, call)
        except WireError as exc:
            return self._refuse(request, exc)
        body = {"cancelled": True, "runId": run, "callId": call}
        return JSONResponse(body, status_code=202, headers=self._headers(request))

    async def handle_chat(
        self, request: Request, *, deps: DepsT | None = None, principal: str | None = None
    ) -> Response:
        """Deprecated: ``handle_ai_sdk``."""
        warn_deprecated("Endpoints.handle_chat", "Endpoints.handle_ai_sdk")
        return await self.handle_ai_sdk(request, deps=deps, principal=principal)

    async def handle_chat_resume(
        self, request: Request, *, chat_id: str | None = None, principal: str | None = None
    ) -> Response:
        """Deprecated: ``handle_ai_sdk_resume``."""
        warn_deprecated("Endpoints.handle_chat_resume", "Endpoints.handle_ai_sdk_resume")
        return await self.handle_ai_sdk_resume(request, chat_id=chat_id, principal=principal)

    async def handle_ai_sdk_resume(
        self, request: Request, *, chat_id: str | None = None, principal: str | None = None
    ) -> Response:
        """``GET /api/chat/{chat_id}/stream``: the AI SDK's resume request (``resumeStream()``,
        ``useChat({ resume: true })``). The chat's running stream from its first frame, then
        live, from whichever replica holds it; 204 when nothing runs in the chat (what the
        AI SDK expects). ``chat_id`` defaults to the route's ``{chat_id}``."""
        try:
            principal = await self._principal(request, principal, body=False)
            thread = chat_id if chat_id is not None else str(request.path_params.get("chat_id"))
            client_id(thread, "the chat id")
        except WireError as exc:
            return self._refuse(request, exc)
        headers = self._headers(request)
        if self.journal is None:
            return Response(status_code=204, headers=headers)
        try:
            segment = await asyncio.to_thread(self.journal.live_segment, thread, principal or "")
            if segment is None:
                return Response(status_code=204, headers=headers)
            return await replay_response(
                self.journal,
                segment,
                0,
                principal or "",
                headers,
                aisdk.AISDKEncoder,
                self.limits.heartbeat_seconds,
            )
        except WireError as exc:
            return self._refuse(request, exc)
        except database_errors() as exc:
            return self._refuse(request, journal_unavailable(exc))

    async def handle_page(self, request: Request) -> Response:
        """``GET`` the playground page. It loads ``/playground.js`` and talks to ``/agui``
        at the root of the site, so mount both there. Public: it holds no data, and asks
        for a token when the server refuses it one (or reads one from ``#token=``)."""
        refused = self._gate.refusal(request, body=False)
        if refused is not None:
            return self._refuse(request, refused)
        return HTMLResponse(asset(PAGE), headers={**NO_CACHE, **page_headers()})

    async def handle_page_script(self, request: Request) -> Response:
        """``GET`` the playground page's script."""
        refused = self._gate.refusal(request, body=False)
        if refused is not None:
            return self._refuse(request, refused)
        headers = {**NO_CACHE, "x-content-type-options": "nosniff"}
        return Response(asset(SCRIPT), media_type="text/javascript", headers=headers)

    async def handle_health(self, request: Request) -> Response:
        """``GET /healthz``: 200 ``{"status": "ok"}`` while the process and its event loop
        answer (liveness). No I/O. Public, like ``handle_ready`` (see there for the
        ``Host`` rule)."""
        refused = self._gate.probe_refusal(request)
        if refused is not None:
            return self._refuse(request, refused)
        return JSONResponse({"status": "ok"}, headers={**NO_STORE, **self._headers(request)})

    async def handle_ready(self, request: Request) -> Response:
        """``GET /readyz``: 200 ``{"status": "ready", "checks": {...}}`` when the journal's
        database answers (within ``READY_TIMEOUT_SECONDS``), the model is configured and,
        with ``durable``, DBOS runs; else 503 ``{"status": "unavailable", "checks": ...}``.
        Each check is ``"ok"`` or a short reason.

        Outside ``authenticate``: a load balancer or an orchestrator cannot usually send a
        token, and the answer gives an attacker nothing to use: fixed check names and
        fixed reasons (an error's type, never its text), no URL, path, secret, version
        or count. That the database is down is what failing requests show anyway. The
        ``Host`` rule holds as for every handler (a DNS-rebinding name gets 400), except
        that a ``Host`` that is an IP address is accepted: probes address a replica by
        its IP, and rebinding needs a name."""
        refused = self._gate.probe_refusal(request)
        if refused is not None:
            return self._refuse(request, refused)
        checks = await self._readiness.checks()
        ready = all(value == "ok" for value in checks.values())
        body = {"status": "ready" if ready else "unavailable", "checks": checks}
        headers = {**NO_STORE, **self._headers(request)}
        return JSONResponse(body, status_code=200 if ready else 503, headers=headers)

    async def handle_preflight(self, request: Request) -> Response:
        """``OPTIONS``: a CORS preflight, 204 for an allowed origin (403 otherwise). Route it
        next to the ``POST`` handlers when pages of ``allowed_origins`` call them."""
        answer = self._gate.preflight(request)
        return self._refuse(request, answer) if isinstance(answer, WireError) else answer

    # --- one request -----------------------------------------------------------------------

    async def _admit(
        self, request: Request, deps: DepsT | None, principal: str | None, *, body: bool
    ) -> _Caller[DepsT]:
        """Who the caller is and what their tools get, or a ``WireError``: the host, the
        origin and the content type first, then ``authenticate`` and ``deps_factory``."""
        principal = await self._principal(request, principal, body=body)
        if deps is None and self.deps_factory is not None:
            deps = await call_hook(self.deps_factory, request, principal)
        return _Caller(principal, deps)

    async def _principal(
        self, request: Request, principal: str | None, *, body: bool
    ) -> str | None:
        """The caller's principal (``principal`` if given, else ``authenticate``'s), after
        the host, origin and content-type checks; a ``WireError`` if refused."""
        refused = self._gate.refusal(request, body=body)
        if refused is not None:
            raise refused
        if principal is None and self.authenticate is not None:
            principal = await call_hook(self.authenticate, request)
            if principal is None:
                raise unauthorized()
        return principal

    async def _run(
        self, request: Request, caller: _Caller[DepsT], run_input: RunInput, encoder: SSEEncoder
    ) -> Response:
        """The run's stream, holding its thread until the stream ends."""
        lease = await self._threads.acquire(caller.principal, run_input.thread_id)
        try:
            run, recorder = await start_run(
                self, RunRequest(run_input, caller.deps, caller.principal, encoder)
            )
        except BaseException:
            lease.release()
            raise
        issuer = Issuer(self._verifier, caller.principal, run.thread_id)
        stream = RunStream(
            run, encoder, issuer, recorder, heartbeat_seconds=self.limits.heartbeat_seconds
        )
        stream.stream_headers.update(self._headers(request))
        live = self._live
        live.add(run, caller.principal)
        stream.on_close = lambda: live.remove(run)
        return lease.hold(stream)

    def _headers(self, request: Request) -> dict[str, str]:
        """What every answer carries: ``nosniff``, and CORS headers for an allowed origin."""
        return {"x-content-type-options": "nosniff", **self._gate.cors_headers(request)}

    def _refuse(self, request: Request, error: WireError) -> Response:
        response = refusal(error)
        response.headers.update(self._headers(request))
        if error.status == 401:
            response.headers["www-authenticate"] = "Bearer"
        return response

    @contextlib.asynccontextmanager
    async def lifespan(self, app: object) -> AsyncIterator[None]:
        """For ``Starlette(lifespan=...)`` or ``FastAPI(lifespan=...)``: settle the runs a
        previous process left unfinished before serving, close the journal and the agent's
        toolsets (MCP sessions) after."""
        self.recover()
        if self.durable is not None:
            self.durable.launch()
        try:
            yield
        finally:
            try:
                if self.durable is not None:
                    await self.durable.close()
                await self.agent.aclose()
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
        self._live.close()
        if self.journal is not None:
            self.journal.close()
