"""Who an MCP session and a paused MCP call belong to, and how many one principal may hold.

``MCPEndpoint`` names the caller (``authenticate``) the way the SDK's own auth does: as
an ``AuthenticatedUser`` in the request's ASGI scope. The SDK then binds each session
to the principal that opened it (another principal's request for it is answered 404
"Session not found", exactly as for an id never issued), and ``principal_of`` binds a
paused call's ``requestState`` and its waiting place to the same principal. Sessions
are counted per principal here (``SessionBook``), because the SDK's own limit is one
for everybody: one principal's sessions must not lock the others out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken, principal_components
from mcp.server.context import ServerRequestContext

SESSION_IDLE_TIMEOUT = 30 * 60.0
"""Seconds an MCP session may go with no request in flight (no call, no open event
stream) before it is closed; its id then answers 404 and the client opens a new one."""

MAX_SESSIONS_PER_PRINCIPAL = 100
"""Open MCP sessions one principal may hold at once; the next is refused (429
``too_many_sessions``) until one ends (DELETE) or expires."""


def user_for(principal: object) -> AuthenticatedUser:
    """The principal ``authenticate`` named, as the user the SDK binds sessions to."""
    name = str(principal)
    return AuthenticatedUser(AccessToken(token="", client_id=name, scopes=[], subject=name))


def principal_of_scope(scope: Any) -> str | None:
    """The principal of a request's ASGI scope (None: unauthenticated)."""
    user = scope.get("user") if isinstance(scope, Mapping) else None
    if not isinstance(user, AuthenticatedUser):
        return None
    return json.dumps(principal_components(user.access_token))


def principal_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The principal of the HTTP request an MCP message came in (None on stdio and when
    nobody is authenticated: then every caller is the same principal)."""
    return principal_of_scope(getattr(ctx.request, "scope", None))


@dataclass(slots=True)
class _Session:
    owner: str | None
    busy: int = 0
    """Requests in flight (an open event stream is one)."""
    idle_since: float = field(default_factory=time.monotonic)


class SessionBook:
    """The open sessions of each principal, to hold each to ``limit``.

    Kept from what passes the endpoint: a session is counted from the answer that
    names it until a DELETE of it succeeds, a request for it is answered 404 (it
    ended in the SDK), or it has been idle for ``idle_timeout`` (the SDK closes it
    then). Sessions still being opened count too, so that concurrent opens cannot
    pass the limit.
    """

    def __init__(self, limit: int, idle_timeout: float | None) -> None:
        if limit < 1:
            raise ValueError("max_sessions_per_principal must be at least 1")
        self.limit = limit
        self.idle_timeout = idle_timeout
        self._sessions: dict[str, _Session] = {}
        self._opening: dict[str | None, int] = {}

    def admit(self, owner: str | None) -> bool:
        """Reserve a place for a session ``owner`` opens; False at the limit."""
        self._forget_idle()
        held = sum(1 for s in self._sessions.values() if s.owner == owner)
        if held + self._opening.get(owner, 0) >= self.limit:
            return False
        self._opening[owner] = self._opening.get(owner, 0) + 1
        return True

    def opened(self, owner: str | None, session_id: str | None) -> None:
        """The open ended: with a session (``session_id``), or without one."""
        left = self._opening.get(owner, 0) - 1
        if left > 0:
            self._opening[owner] = left
        else:
            self._opening.pop(owner, None)
        if session_id is not None:
            self._sessions[session_id] = _Session(owner)

    def enter(self, session_id: str, owner: str | None) -> bool:
        """A request of ``owner`` for the session begins; False if it is not theirs."""
        session = self._sessions.get(session_id)
        if session is None or session.owner != owner:
            return False
        session.busy += 1
        return True

    def leave(self, session_id: str, *, ended: bool) -> None:
        """The request ``enter`` let in is answered; ``ended``: the session is gone."""
        session = self._sessions.get(session_id)
        if session is None:
            return
        session.busy -= 1
        session.idle_since = time.monotonic()
        if ended:
            del self._sessions[session_id]

    def clear(self) -> None:
        self._sessions.clear()
        self._opening.clear()

    def _forget_idle(self) -> None:
        if self.idle_timeout is None:
            return
        now = time.monotonic()
        gone = [
            key
            for key, s in self._sessions.items()
            if s.busy == 0 and now - s.idle_since > self.idle_timeout
        ]
        for key in gone:
            del self._sessions[key]
