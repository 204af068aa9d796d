"""callwright's endpoints mounted in your own FastAPI app, behind your own authentication.

FastAPI is not a dependency of callwright: bring your own
(``pip install fastapi uvicorn 'callwright[server]'``). Run it with
``python examples/fastapi_app.py`` (the model is ``$CALLWRIGHT_MODEL``, by default
the embedded one) and send ``Authorization: Bearer <token>`` with every request:
the token is ``$APP_TOKEN``, or the one printed at start-up.

Your app decides who the caller is (here a bearer token, with FastAPI's
``HTTPBearer``); the caller's name is the run's principal, which owns its
threads, runs and approvals, and ``deps_factory`` makes what the tools get from
it (``deps``, read as ``ctx.deps``). callwright's ``Endpoints`` turn the request
into a run and stream it back: AG-UI at ``POST /agui``, the AI SDK UI message
stream at ``POST /api/chat``, and (with a journal) a dropped stream's replay at
``GET /runs/{run_id}/events`` and the AI SDK's resume of a chat's running stream at
``GET /api/chat/{chat_id}/stream``. A front end served from another origin (a Vite dev
server, say) is listed in ``$APP_ORIGINS`` (comma-separated); the endpoints
answer its CORS preflights and refuse every other site's pages on their own.
"""

import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from callwright import Agent, ToolContext, tool
from callwright.server import Endpoints
from callwright.store import Journal


@dataclass(frozen=True)
class Deps:
    """What a tool may know about the request it runs for."""

    user: str
    """The authenticated user's name."""


@tool
def whoami(ctx: ToolContext[Deps]) -> str:
    """The name of the user you are talking to."""
    return ctx.deps.user if ctx.deps is not None else "nobody"


def deps_of(request: Request, user: str | None) -> Deps:
    """The tools' view of the caller, made from the principal the route passes."""
    return Deps(user or "nobody")


def build_app(
    agent: Agent[Deps, Any],
    tokens: Mapping[str, str],
    *,
    journal: Journal | None = None,
    origins: Sequence[str] = (),
) -> FastAPI:
    """The app: ``tokens`` maps each bearer token to the user it authenticates; pages of
    ``origins`` may call it from another origin."""
    endpoints = Endpoints(agent, journal=journal, deps_factory=deps_of, allowed_origins=origins)
    bearer = HTTPBearer(auto_error=False)

    def current_user(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> str:
        given = credentials.credentials if credentials is not None else ""
        for token, user in tokens.items():
            if secrets.compare_digest(given.encode(), token.encode()):
                return user
        raise HTTPException(401, "a valid bearer token is required", {"WWW-Authenticate": "Bearer"})

    User = Annotated[str, Depends(current_user)]
    # The lifespan settles runs a previous process left unfinished and closes the journal.
    app = FastAPI(lifespan=endpoints.lifespan)

    @app.post("/agui")
    async def agui(request: Request, user: User) -> Response:
        return await endpoints.handle_agui(request, principal=user)

    @app.post("/api/chat")
    async def chat(request: Request, user: User) -> Response:
        return await endpoints.handle_ai_sdk(request, principal=user)

    @app.get("/api/chat/{chat_id}/stream")
    async def chat_resume(request: Request, chat_id: str, user: User) -> Response:
        return await endpoints.handle_ai_sdk_resume(request, chat_id=chat_id, principal=user)

    @app.get("/runs/{run_id}/events")
    async def replay(request: Request, run_id: str, user: User) -> Response:
        return await endpoints.handle_replay(request, run_id=run_id, principal=user)

    # The probes need no token: a load balancer sends none, and they reveal nothing.
    app.add_api_route("/healthz", endpoints.handle_health, methods=["GET", "HEAD"])
    app.add_api_route("/readyz", endpoints.handle_ready, methods=["GET", "HEAD"])

    # CORS preflights carry no credentials: answered before authentication.
    for path in ("/agui", "/api/chat", "/api/chat/{chat_id}/stream", "/runs/{run_id}/events"):
        app.add_api_route(path, endpoints.handle_preflight, methods=["OPTIONS"])

    return app


def main() -> None:
    import uvicorn

    token = os.environ.get("APP_TOKEN") or secrets.token_urlsafe(24)
    agent = Agent(
        os.environ.get("CALLWRIGHT_MODEL"),
        [whoami],
        deps_type=Deps,
        instructions="Call whoami when asked who the user is.",
    )
    origins = [o for o in os.environ.get("APP_ORIGINS", "").split(",") if o]
    print(f"Authorization: Bearer {token}")
    uvicorn.run(build_app(agent, {token: "alice"}, origins=origins), host="127.0.0.1", port=8000)


if __name__ == "__main__":
    main()
