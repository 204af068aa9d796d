"""``create_app``: a Starlette app made of the ``Endpoints`` and nothing else."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..approvals import ApprovalLedger, MemoryApprovalLedger
from ..context import DepsT
from ..run import Agent
from ..store import ApprovalSigner, Journal
from ..wire import WireError
from ._body import ServerLimits
from ._endpoints import DepsFactory, Endpoints
from ._security import Authenticate

if TYPE_CHECKING:
    from ..durable import DurableRuntime

log = logging.getLogger("callwright.server")


def create_app(
    agent: Agent[DepsT, Any],
    *,
    ledger: ApprovalLedger | None = None,
    journal: Journal | None = None,
    signer: ApprovalSigner | None = None,
    limits: ServerLimits | None = None,
    allow_client_override: bool = False,
    ai_sdk_version: int = 6,
    authenticate: Authenticate | None = None,
    deps_factory: DepsFactory[DepsT] | None = None,
    allowed_origins: Sequence[str] = (),
    allowed_hosts: Sequence[str] | None = None,
    durable: DurableRuntime | None = None,
) -> Starlette:
    """A Starlette app serving ``agent`` to AG-UI and AI SDK front ends, and the playground.

    The options are ``Endpoints``' (see there): ``authenticate=bearer_token(secret)``
    puts the endpoints behind a shared token. The app's lifespan settles the runs a
    previous process left unfinished in the ``journal`` before it serves, and closes
    the journal on shutdown.
    """
    endpoints = Endpoints(
        agent,
        journal=journal,
        signer=signer,
        ledger=ledger if ledger is not None else MemoryApprovalLedger(),
        limits=limits or ServerLimits(),
        allow_client_override=allow_client_override,
        ai_sdk_version=ai_sdk_version,
        authenticate=authenticate,
        deps_factory=deps_factory,
        allowed_origins=allowed_origins,
        allowed_hosts=allowed_hosts,
        durable=durable,
    )
    preflight = endpoints.handle_preflight
    return Starlette(
        routes=[
            Route("/agui", endpoints.handle_agui, methods=["POST"]),
            Route("/agui", preflight, methods=["OPTIONS"]),
            Route("/api/chat", endpoints.handle_ai_sdk, methods=["POST"]),
            Route("/api/chat", preflight, methods=["OPTIONS"]),
            Route("/api/chat/{chat_id}/stream", endpoints.handle_ai_sdk_resume, methods=["GET"]),
            Route("/api/chat/{chat_id}/stream", preflight, methods=["OPTIONS"]),
            Route("/runs/{run_id}/events", endpoints.handle_replay, methods=["GET"]),
            Route("/runs/{run_id}/events", preflight, methods=["OPTIONS"]),
            Route(
                "/runs/{run_id}/artifacts/{artifact_id}",
                endpoints.handle_artifact,
                methods=["GET"],
            ),
            Route("/runs/{run_id}/artifacts/{artifact_id}", preflight, methods=["OPTIONS"]),
            Route(
                "/runs/{run_id}/calls/{call_id}/cancel",
                endpoints.handle_cancel_call,
                methods=["POST"],
            ),
            Route("/runs/{run_id}/calls/{call_id}/cancel", preflight, methods=["OPTIONS"]),
            Route("/healthz", endpoints.handle_health, methods=["GET"]),
            Route("/readyz", endpoints.handle_ready, methods=["GET"]),
            Route("/", endpoints.handle_page, methods=["GET"]),
            Route("/playground.js", endpoints.handle_page_script, methods=["GET"]),
        ],
        exception_handlers={HTTPException: _http_error, Exception: _server_error},
        lifespan=endpoints.lifespan,
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (unknown path, wrong method) in our error shape."""
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    error = WireError(str(exc.detail), code, exc.status_code)
    return JSONResponse(error.body(), status_code=exc.status_code, headers=exc.headers)


async def _server_error(request: Request, exc: Exception) -> Response:
    """A bug: logged with its traceback, answered with a message and a code only."""
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    error = WireError("the server failed to handle the request", "server_error", 500)
    return JSONResponse(error.body(), status_code=500)
