"""The streamable-HTTP ``/mcp`` endpoint behind the same gate as ``/agui``, over raw HTTP.

A page of another origin is refused (403), a DNS-rebinding ``Host`` on a loopback
address too (400 ``invalid_host``), a cross-site content type (415), each with the
status, error body and headers ``/agui`` of the same app gives; the server's own origin,
an allowed origin (with CORS headers and preflights) and clients that send no
``Origin`` (the Python and TypeScript SDK clients, tested in test_server.py and
test_js_clients.py) are served. Nothing refused reaches the agent's tools.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

EVIL = "https://evil.example"
APP = "https://app.example.com"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
MCP_ACCEPT = {"accept": "application/json, text/event-stream"}
AGUI_RUN = {"threadId": "t1", "runId": "r1", "messages": [], "tools": [], "context": []}


def both(server: Any, headers: dict[str, str], content_type: str = "application/json") -> Any:
    """The same request's answers from /mcp (an MCP initialize) and /agui (a run)."""
    base = server.url.removesuffix("/mcp")
    sent = {"content-type": content_type, **MCP_ACCEPT, **headers}
    with httpx.Client(timeout=30) as http:
        mcp = http.post(server.url, json=INITIALIZE, headers=sent)
        agui = http.post(f"{base}/agui", json=AGUI_RUN, headers=sent)
    return mcp, agui


def shown(response: httpx.Response) -> tuple[int, str, str | None, str | None]:
    """What a refusal is made of: status, error code, and the headers both must carry."""
    error = response.json()["error"]["code"]
    headers = response.headers
    return (
        response.status_code,
        error,
        headers.get("x-content-type-options"),
        headers.get("access-control-allow-origin"),
    )


@pytest.mark.parametrize(
    ("headers", "content_type", "expected"),
    [
        ({"origin": EVIL}, "application/json", (403, "origin_not_allowed", "nosniff", None)),
        ({"origin": "null"}, "application/json", (403, "origin_not_allowed", "nosniff", None)),
        ({"host": "evil.example"}, "application/json", (400, "invalid_host", "nosniff", None)),
        ({}, "text/plain", (415, "unsupported_media_type", "nosniff", None)),
    ],
    ids=["foreign-origin", "null-origin", "rebinding-host", "text-plain"],
)
def test_refused_like_agui(
    http_server: Any, headers: dict[str, str], content_type: str, expected: tuple[Any, ...]
) -> None:
    port = http_server.url.split(":")[2].split("/")[0]
    if "host" in headers:
        headers = {"host": f"evil.example:{port}", "origin": f"http://evil.example:{port}"}
    elif content_type == "text/plain":
        headers = {"origin": f"http://127.0.0.1:{port}"}  # a page of the server's own origin
    mcp, agui = both(http_server, headers, content_type)
    assert shown(mcp) == expected
    assert shown(mcp) == shown(agui)


def test_a_rebinding_host_is_refused_for_the_event_stream_too(http_server: Any) -> None:
    port = http_server.url.split(":")[2].split("/")[0]
    with httpx.Client(timeout=30) as http:
        stream = http.get(http_server.url, headers={"host": f"evil.example:{port}"})
        ended = http.delete(http_server.url, headers={"origin": EVIL})
    assert (stream.status_code, stream.json()["error"]["code"]) == (400, "invalid_host")
    assert (ended.status_code, ended.json()["error"]["code"]) == (403, "origin_not_allowed")


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_the_servers_own_origin_and_loopback_names_are_served(http_server: Any, host: str) -> None:
    port = http_server.url.split(":")[2].split("/")[0]
    headers = {"host": f"{host}:{port}", "origin": f"http://{host}:{port}", **MCP_ACCEPT}
    with httpx.Client(timeout=30) as http:
        answer = http.post(http_server.url, json=INITIALIZE, headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert "mcp-session-id" in answer.headers
    assert "access-control-allow-origin" not in answer.headers  # same origin: no CORS


def test_an_allowed_origin_gets_cors_headers_and_preflights(http_server_with: Any) -> None:
    with (
        http_server_with(allowed_origins=[APP]) as server,
        httpx.Client(timeout=30) as http,
    ):
        preflight = http.options(
            server.url,
            headers={
                "origin": APP,
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type, mcp-protocol-version",
            },
        )
        answer = http.post(server.url, json=INITIALIZE, headers={"origin": APP, **MCP_ACCEPT})
        foreign = http.options(
            server.url, headers={"origin": EVIL, "access-control-request-method": "POST"}
        )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == APP
    assert "DELETE" in preflight.headers["access-control-allow-methods"]
    assert preflight.headers["access-control-allow-headers"] == "content-type, mcp-protocol-version"
    assert answer.status_code == 200, answer.text
    assert answer.headers["access-control-allow-origin"] == APP
    assert "mcp-session-id" in answer.headers["access-control-expose-headers"]
    assert foreign.status_code == 403


def test_allowed_hosts_replace_the_loopback_rule(http_server_with: Any) -> None:
    with (
        http_server_with(allowed_hosts=["mcp.example", "localhost:*"]) as server,
        httpx.Client(timeout=30) as http,
    ):
        port = server.url.split(":")[2].split("/")[0]
        status = {
            host: http.post(
                server.url, json=INITIALIZE, headers={"host": host, **MCP_ACCEPT}
            ).status_code
            for host in ("mcp.example", f"localhost:{port}", f"127.0.0.1:{port}", "evil.example")
        }
    assert status == {
        "mcp.example": 200,
        f"localhost:{port}": 200,
        f"127.0.0.1:{port}": 400,
        "evil.example": 400,
    }
