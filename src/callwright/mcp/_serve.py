"""Serving an agent over MCP: on stdio (``callwright mcp``) and as a streamable-HTTP
endpoint mounted beside ``/agui`` in any Starlette or FastAPI app.

The endpoint is the SDK's streamable-HTTP session manager: its ``run()`` must be
running while requests come in, which is what ``MCPEndpoint.lifespan`` is for (and
what ``mount_mcp`` adds to an app's lifespan). In front of it stand the checks the
other endpoints make themselves (``server._security.Gate``: host, origin, content
type) and ``authenticate``, the same hook they take
(``callwright.server.bearer_token(secret)``, say): a request they refuse gets the same
status, error body and headers as there, before the SDK sees it. The SDK's own
DNS-rebinding check stays off: the gate's rules are the server's everywhere.

Every session and every paused call belongs to the principal ``authenticate`` named
(``_owners``): another principal's request for it is answered as if it did not exist.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from ..run import Agent
from ..server._responses import refusal
from ..server._security import Gate, call_hook, unauthorized
from ..wire import WireError
from ._asking import MAX_PAUSED_PER_PRINCIPAL
from ._owners import (
    MAX_SESSIONS_PER_PRINCIPAL,
    SESSION_IDLE_TIMEOUT,
    SessionBook,
    principal_of_scope,
    user_for,
)
from ._server import AgentServer
from ._taskbook import MAX_TASKS_PER_PRINCIPAL, TASK_AFTER, TASK_TTL

MCP_EXPOSED_HEADERS = "mcp-session-id, mcp-protocol-version"
"""What a page of an allowed origin may read of an answer (its MCP session)."""


def _host_entry(entry: str) -> str:
    """An ``allowed_hosts`` entry in the gate's terms: the SDK's ``name:*`` (any port)
    is the gate's bare ``name``."""
    return entry[:-2] if entry.endswith(":*") else entry


async def serve_stdio(
    agent: Agent[Any, Any],
    *,
    name: str | None = None,
    expose_agent: bool | str = False,
    tools: Sequence[str] | None = None,
) -> None:
    """Serve the agent's tools to one MCP client over stdin/stdout until it disconnects."""
    served = AgentServer(agent, name=name, expose_agent=expose_agent, tools=tools)
    try:
        async with stdio_server() as (read, write):
            options = served.server.create_initialization_options()
            await served.server.run(read, write, options)
    finally:
        served.tasks.close()
        await agent.aclose()


class MCPEndpoint:
    """The agent's tools over streamable HTTP, as an ASGI app to mount at a path.

    Each request passes the same gate as ``/agui`` and ``/api/chat`` (``server``'s
    ``Gate``) before the SDK sees it: on a loopback address the ``Host`` must be a
    loopback name (DNS rebinding), a browser's ``Origin`` must be the server's own or
    listed in ``allowed_origins`` (403 otherwise; listed ones get CORS headers and
    preflight answers), and a POST body must be ``application/json``.
    ``allowed_hosts`` replaces the loopback rule as for the other endpoints (``name``,
    ``name:port``, ``*.domain``, ``*``; the SDK's ``name:*`` is read as ``name``).
    ``stateless`` serves each request on its own (no session id), as a load-balanced
    deployment needs; ``authenticate(request)`` returns the caller's principal, or None
    to refuse (401).

    A session, and a call paused on a question, belong to the principal that made them:
    another principal's request for a session is answered 404 like an unknown id, its
    ``requestState`` is refused like a forged one. One principal holds at most
    ``max_sessions_per_principal`` open sessions (100; 429 ``too_many_sessions`` past it)
    and ``max_paused_per_principal`` paused calls (1,000; its own oldest forgotten past
    it); a session with no request in flight for ``session_idle_timeout`` seconds (30
    minutes; None: never) is closed. Without ``authenticate`` every caller is the same
    principal, unless the app's own middleware names the user as the MCP SDK's auth
    does (an ``AuthenticatedUser`` in ``scope["user"]``).

    A 2026-07-28 client that declares the tasks extension gets a task for a call still
    running after ``task_after`` seconds (1; None: never), or asking its user: it polls
    ``tasks/get``, answers with ``tasks/update`` and stops it with ``tasks/cancel``. A
    task belongs to its caller's principal like a paused call, runs at most ``task_ttl``
    seconds (an hour; then it is stopped and fails as expired), is kept as long after it
    ended, and one principal holds at most ``max_tasks_per_principal`` (1,000; past it
    calls are answered without a task). Tasks live in this process.
    """

    def __init__(
        self,
        agent: Agent[Any, Any],
        *,
        name: str | None = None,
        expose_agent: bool | str = False,
        tools: Sequence[str] | None = None,
        stateless: bool = False,
        json_response: bool = False,
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
        authenticate: Callable[[Request], Any] | None = None,
        session_idle_timeout: float | None = SESSION_IDLE_TIMEOUT,
        max_sessions_per_principal: int = MAX_SESSIONS_PER_PRINCIPAL,
        max_paused_per_principal: int = MAX_PAUSED_PER_PRINCIPAL,
        task_after: float | None = TASK_AFTER,
        task_ttl: float = TASK_TTL,
        max_tasks_per_principal: int = MAX_TASKS_PER_PRINCIPAL,
    ) -> None:
        self.authenticate = authenticate
        self.agent_server = AgentServer(
            agent,
            name=name,
            expose_agent=expose_agent,
            tools=tools,
            max_paused_per_principal=max_paused_per_principal,
            task_after=task_after,
            task_ttl=task_ttl,
            max_tasks_per_principal=max_tasks_per_principal,
        )
        hosts = [_host_entry(h) for h in allowed_hosts] if allowed_hosts is not None else None
        self.gate = Gate.of(allowed_origins or (), hosts)
        self.manager = StreamableHTTPSessionManager(
            app=self.agent_server.server,
            stateless=stateless,
            json_response=json_response,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            session_idle_timeout=session_idle_timeout,
        )
        self.sessions = SessionBook(max_sessions_per_principal, session_idle_timeout)
        self._app = StreamableHTTPASGIApp(self.manager)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        request = Request(scope)
        headers = self._headers(request)
        admitted = await self._admit(request)
        if isinstance(admitted, WireError):
            await _refused(admitted, headers)(scope, receive, send)
            return
        if isinstance(admitted, Response):
            await admitted(scope, receive, send)
            return
        scope = admitted
        owner = principal_of_scope(scope)
        session_id = request.headers.get("mcp-session-id")
        opens = session_id is None and _opens_session(request) and not self.manager.stateless
        if opens and not self.sessions.admit(owner):
            await _refused(_too_many_sessions(), headers)(scope, receive, send)
            return
        counted = session_id is not None and self.sessions.enter(session_id, owner)
        answer: dict[str, Any] = {}

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = MutableHeaders(scope=message)
                answer.update(status=message["status"], session=raw.get("mcp-session-id"))
                for key, value in headers.items():
                    raw[key] = value
            await send(message)

        try:
            await self._app(scope, receive, send_with_headers)
        finally:
            status = answer.get("status", 500)
            if opens:
                self.sessions.opened(owner, answer.get("session") if status < 400 else None)
            if counted and session_id is not None:
                ended = status == 404 or (request.method == "DELETE" and status < 300)
                self.sessions.leave(session_id, ended=ended)

    async def _admit(self, request: Request) -> WireError | Response | Scope:
        """The gate, then ``authenticate``: a refusal, a preflight's answer, or the
        request's scope naming its principal as the SDK reads it (``scope["user"]``)."""
        if request.method == "OPTIONS":
            answer = self.gate.preflight(request)
            if isinstance(answer, Response):
                answer.headers["access-control-allow-methods"] = "GET, POST, DELETE"
            return answer
        refused = self.gate.refusal(request, body=request.method == "POST")
        if refused is not None:
            return refused
        if self.authenticate is None:
            return request.scope
        principal = await call_hook(self.authenticate, request)
        if principal is None:
            return unauthorized()
        return {**request.scope, "user": user_for(principal)}

    def _headers(self, request: Request) -> dict[str, str]:
        """``nosniff`` on every answer; for an allowed page of another origin, the CORS
        headers, exposing the session and protocol headers an MCP client reads."""
        headers = {"x-content-type-options": "nosniff", **self.gate.cors_headers(request)}
        if "access-control-expose-headers" in headers:
            headers["access-control-expose-headers"] = MCP_EXPOSED_HEADERS
        return headers

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Runs the session manager while the app serves (once per endpoint)."""
        try:
            async with self.manager.run():
                yield
        finally:
            self.sessions.clear()
            self.agent_server.tasks.close()


def _refused(refused: WireError, headers: dict[str, str]) -> Response:
    answer = refusal(refused)
    answer.headers.update(headers)
    if refused.status == 401:
        answer.headers["www-authenticate"] = "Bearer"
    return answer


def _opens_session(request: Request) -> bool:
    """Whether the SDK opens a session for this request if it succeeds: a POST without a
    session id, of the handshake era (a 2026-07-28 request is served on its own)."""
    version = request.headers.get("mcp-protocol-version")
    return request.method == "POST" and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)


def _too_many_sessions() -> WireError:
    return WireError(
        "too many open MCP sessions for this caller: end one (DELETE) or wait for an idle "
        "one to expire",
        "too_many_sessions",
        429,
    )


def mount_mcp(
    app: Starlette, agent: Agent[Any, Any], path: str = "/mcp", **options: Any
) -> MCPEndpoint:
    """Serve the agent's tools over MCP at ``path`` of ``app`` (``create_app``'s, or yours),
    with the endpoint's session manager added to the app's lifespan. ``options`` are
    ``MCPEndpoint``'s."""
    endpoint = MCPEndpoint(agent, **options)
    methods = ["GET", "POST", "DELETE", "OPTIONS"]
    app.router.routes.append(Route(path, endpoint, methods=methods))
    inner: Callable[[Any], Any] = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(target: Any) -> AsyncIterator[Any]:
        async with endpoint.lifespan(), inner(target) as state:
            yield state

    app.router.lifespan_context = lifespan
    return endpoint
