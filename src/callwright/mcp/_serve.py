"""Serving an agent over MCP: on stdio (``callwright mcp``) and as a streamable-HTTP
endpoint mounted beside ``/agui`` in any Starlette or FastAPI app.

The endpoint is the SDK's streamable-HTTP session manager: its ``run()`` must be
running while requests come in, which is what ``MCPEndpoint.lifespan`` is for (and
what ``mount_mcp`` adds to an app's lifespan). ``authenticate`` is the same hook the
other endpoints take (``callwright.server.bearer_token(secret)``, say): a request it
names no principal for is refused with 401 before the SDK sees it.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..run import Agent
from ._server import AgentServer


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
        await agent.aclose()


class MCPEndpoint:
    """The agent's tools over streamable HTTP, as an ASGI app to mount at a path.

    ``allowed_hosts`` / ``allowed_origins`` turn on the SDK's DNS-rebinding protection
    (``["127.0.0.1:*", "localhost:*"]`` for a local server, say); ``stateless`` serves
    each request on its own (no session id), as a load-balanced deployment needs;
    ``authenticate(request)`` returns the caller's principal, or None to refuse (401).
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
    ) -> None:
        self.authenticate = authenticate
        self.agent_server = AgentServer(agent, name=name, expose_agent=expose_agent, tools=tools)
        security = None
        if allowed_hosts is not None or allowed_origins is not None:
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=list(allowed_hosts or []),
                allowed_origins=list(allowed_origins or []),
            )
        self.manager = StreamableHTTPSessionManager(
            app=self.agent_server.server,
            stateless=stateless,
            json_response=json_response,
            security_settings=security,
        )
        self._app = StreamableHTTPASGIApp(self.manager)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.authenticate is not None and scope["type"] == "http":
            principal = self.authenticate(Request(scope))
            if inspect.isawaitable(principal):
                principal = await principal
            if principal is None:
                body = {"error": {"message": "authentication required", "code": "unauthorized"}}
                refused = JSONResponse(body, 401, {"www-authenticate": "Bearer"})
                await refused(scope, receive, send)
                return
        await self._app(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Runs the session manager while the app serves (once per endpoint)."""
        async with self.manager.run():
            yield


def mount_mcp(
    app: Starlette, agent: Agent[Any, Any], path: str = "/mcp", **options: Any
) -> MCPEndpoint:
    """Serve the agent's tools over MCP at ``path`` of ``app`` (``create_app``'s, or yours),
    with the endpoint's session manager added to the app's lifespan. ``options`` are
    ``MCPEndpoint``'s."""
    endpoint = MCPEndpoint(agent, **options)
    app.router.routes.append(Route(path, endpoint, methods=["GET", "POST", "DELETE"]))
    inner: Callable[[Any], Any] = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(target: Any) -> AsyncIterator[Any]:
        async with endpoint.lifespan(), inner(target) as state:
            yield state

    app.router.lifespan_context = lifespan
    return endpoint
