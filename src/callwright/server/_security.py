"""Who may call the endpoints and from where: authentication, origins, hosts, page headers.

Checked by every handler itself, not by middleware, so that the endpoints
mounted in someone else's app without any middleware still refuse a cross-site
request. In order:

* **Host.** A request that arrives on a loopback address must name a loopback
  host (``localhost``, ``127.0.0.1`` or ``[::1]``, any port: an SSH tunnel or a
  port forward shows another one); anything else there is a DNS-rebinding page
  (``evil.example`` resolved to 127.0.0.1). ``allowed_hosts`` replaces the rule
  with a list (``"*"``: no check).
* **Origin.** A browser names the page that sent a request in ``Origin``. It is
  honoured when it is the server's own (its host is the ``Host`` the request
  was sent to) or listed in ``allowed_origins``; otherwise 403.
* **Authentication.** ``authenticate(request)`` names the principal, or None:
  401.
* **Content type.** A body must be ``application/json``: ``text/plain`` and
  form posts are what a page on another site can send without asking (a CORS
  "simple request"). A body without a content type is accepted only from a
  client that sends no ``Origin`` (every browser sends one with a POST), so
  scripts and curl keep working.

Written by hand rather than with Starlette's ``CORSMiddleware`` and
``TrustedHostMiddleware``: middleware guards one app, not a handler mounted in
another, the latter parses ``[::1]:8000`` as the host ``[``, and one origin
rule here answers both the preflight and the request.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import inspect
import ipaddress
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeAlias
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from ..playground import PAGE, asset
from ..wire import WireError

Authenticate: TypeAlias = Callable[[Request], "str | Awaitable[str | None] | None"]
"""``authenticate(request)``: the caller's principal (an id such as a user name), or
None to refuse the request with 401. Sync or async."""

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
EXPOSED_HEADERS = "x-callwright-run-id"
PREFLIGHT_MAX_AGE = "600"
_HOST = re.compile(r"(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
_HEADER_LIST = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+(?:\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*")


def bearer_token(token: str, principal: str = "token") -> Authenticate:
    """An ``authenticate`` hook for one shared secret: ``Authorization: Bearer <token>``
    names ``principal``; anything else is refused (compared in constant time)."""
    if len(token) < 16:
        raise ValueError("use a token of at least 16 characters")
    expected = f"Bearer {token}".encode()

    def authenticate(request: Request) -> str | None:
        given = request.headers.get("authorization", "").encode()
        return principal if hmac.compare_digest(given, expected) else None

    return authenticate


async def call_hook(hook: Callable[..., Any], *args: Any) -> Any:
    """A hook's result, awaited when the hook is async."""
    result = hook(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


def unauthorized() -> WireError:
    return WireError(
        "authentication required: this server needs credentials "
        "(with `callwright serve --token`, send Authorization: Bearer <token>)",
        "unauthorized",
        401,
    )


@dataclass(frozen=True, slots=True)
class Gate:
    """The host, origin and content-type rules of one set of endpoints."""

    allowed_origins: frozenset[str] = frozenset()
    """Origins (``scheme://host[:port]``) besides the server's own whose pages may call."""
    allowed_hosts: tuple[str, ...] | None = None
    """The ``Host`` names served (``name``, ``name:port``, ``*.domain``, ``*``); None: the
    loopback rule."""

    @classmethod
    def of(cls, origins: Iterable[str], hosts: Iterable[str] | None) -> Gate:
        normalised = frozenset(o.strip().lower().rstrip("/") for o in origins)
        if "*" in normalised or "null" in normalised:
            raise ValueError("allowed_origins lists origins (scheme://host[:port]), not * or null")
        return cls(normalised, tuple(h.strip().lower() for h in hosts) if hosts else None)

    def refusal(self, request: Request, *, body: bool) -> WireError | None:
        """Why the request is refused before authentication, or None."""
        if not self.host_allowed(request):
            return _invalid_host()
        origin = request.headers.get("origin")
        if origin is not None and not self.origin_allowed(request, origin):
            return WireError(
                "requests from this page's origin are not allowed (allowed_origins)",
                "origin_not_allowed",
                403,
            )
        if body:
            return _content_type_refusal(request, origin)
        return None

    def probe_refusal(self, request: Request) -> WireError | None:
        """Why a health probe (``/healthz``, ``/readyz``) is refused, or None: the Host rule,
        except that a Host that is an IP address (any port) is accepted. Load balancers
        and orchestrators probe a replica by its address, which no ``allowed_hosts`` list
        can know in advance; and DNS rebinding needs a name that resolves to the
        victim, so an address is never one. A rebinding name still gets 400."""
        if self.host_allowed(request) or _is_address(request.headers.get("host", "")):
            return None
        return _invalid_host()

    def host_allowed(self, request: Request) -> bool:
        if self.allowed_hosts is None and not _on_loopback(request):
            return True
        if self.allowed_hosts is not None and "*" in self.allowed_hosts:
            return True
        host = request.headers.get("host", "")
        if _HOST.fullmatch(host) is None:
            return False
        parts = urlsplit(f"//{host.lower()}")
        try:
            name, port = parts.hostname or "", parts.port
        except ValueError:  # a port past 65535
            return False
        if self.allowed_hosts is None:
            return name in LOOPBACK_NAMES
        return any(_host_matches(entry, name, port) for entry in self.allowed_hosts)

    def origin_allowed(self, request: Request, origin: str) -> bool:
        normalised = origin.strip().lower().rstrip("/")
        if normalised in self.allowed_origins:
            return True
        parts = urlsplit(normalised)
        own = request.headers.get("host", "").lower()
        return parts.scheme in ("http", "https") and bool(own) and parts.netloc == own

    def cors_headers(self, request: Request) -> dict[str, str]:
        """The headers that let an allowed page of another origin read the response."""
        origin = request.headers.get("origin")
        if origin is None or origin.strip().lower().rstrip("/") not in self.allowed_origins:
            return {}
        return {
            "access-control-allow-origin": origin,
            "access-control-allow-credentials": "true",
            "access-control-expose-headers": EXPOSED_HEADERS,
            "vary": "Origin",
        }

    def preflight(self, request: Request) -> Response | WireError:
        """The answer to a CORS preflight (``OPTIONS``): 204 with the allowances for an
        allowed origin, else the refusal."""
        refused = self.refusal(request, body=False)
        if refused is not None:
            return refused
        origin = request.headers.get("origin")
        method = request.headers.get("access-control-request-method")
        if origin is None or method is None:
            return WireError(
                "OPTIONS here is a CORS preflight: it needs Origin and "
                "Access-Control-Request-Method",
                "invalid_request",
            )
        headers = {**self.cors_headers(request), "access-control-allow-methods": "GET, POST"}
        headers["access-control-max-age"] = PREFLIGHT_MAX_AGE
        headers["vary"] = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"
        asked = request.headers.get("access-control-request-headers", "").strip()
        if asked and _HEADER_LIST.fullmatch(asked):
            headers["access-control-allow-headers"] = asked
        return Response(status_code=204, headers=headers)


def _invalid_host() -> WireError:
    return WireError(
        "the Host header names a host this server does not serve (allowed_hosts)",
        "invalid_host",
    )


def _is_address(host: str) -> bool:
    """Whether a ``Host`` header names an IP address (``10.0.0.5:8000``, ``[::1]``)."""
    if _HOST.fullmatch(host) is None:
        return False
    try:
        name = urlsplit(f"//{host}").hostname or ""
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _content_type_refusal(request: Request, origin: str | None) -> WireError | None:
    declared = request.headers.get("content-type")
    if declared is None and origin is None:
        return None
    media = (declared or "").split(";")[0].strip().lower()
    if media == "application/json":
        return None
    return WireError(
        "the request body must be sent as Content-Type: application/json",
        "unsupported_media_type",
        415,
    )


def _on_loopback(request: Request) -> bool:
    """Whether the request arrived on a loopback address of this machine."""
    server = request.scope.get("server")
    if not server or not isinstance(server[0], str):
        return False
    try:
        address = ipaddress.ip_address(server[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def _host_matches(entry: str, name: str, port: int | None) -> bool:
    parts = urlsplit(f"//{entry}")
    try:
        want_name, want_port = parts.hostname or "", parts.port
    except ValueError:
        return False
    if want_port is not None and want_port != port:
        return False
    if want_name.startswith("*."):
        return name.endswith(want_name[1:])
    return name == want_name


# --- the page ------------------------------------------------------------------------------


def _style_hashes(page: bytes) -> str:
    """CSP sources for the page's inline ``<style>`` blocks (hashed, never unsafe-inline)."""
    blocks = re.findall(rb"<style>(.*?)</style>", page, re.DOTALL)
    return " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(block).digest()).decode()}'" for block in blocks
    )


def page_headers() -> dict[str, str]:
    """The playground page's security headers: only its own script and hashed styles
    run, it cannot be framed, and it leaks no address through ``Referer``."""
    policy = "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            f"style-src 'self' {_style_hashes(asset(PAGE))}".rstrip(),
            "img-src 'self' data:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
    )
    return {
        "content-security-policy": policy,
        "x-frame-options": "DENY",
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "cross-origin-opener-policy": "same-origin",
    }
