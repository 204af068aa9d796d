"""What a hostile web page can make a browser send, over real HTTP: cross-site content
types and origins never run a tool, CORS preflights answer allowed origins only, a
DNS-rebinding Host is refused on a loopback address, the handlers refuse on their own
when mounted without middleware, and the page carries its security headers (and, in
Chromium, breaks none of them, takes its token from ``#token=`` and makes random ids)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from callwright import Agent, tool
from callwright.messages import ToolResultMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.playground import PAGE, asset
from callwright.server import Endpoints, bearer_token, create_app
from callwright.store import SQLiteJournal
from live_server import Server

RAN: list[str] = []
APP_ORIGIN = "https://app.example"
EVIL = "https://evil.example"


@tool
def touch(name: str) -> str:
    """Touch a file (records that it ran)."""
    RAN.append(name)
    return f"touched {name}"


def script(request: ModelRequest) -> list[Any]:
    if isinstance(request.messages[-1], ToolResultMessage):
        return ["Done."]
    return [call("touch", {"name": "x"}, id=f"call_{uuid.uuid4().hex[:8]}")]


def agent() -> Agent:
    return Agent(ScriptedModel(script, record=False), [touch])


AGUI = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "touch x"}],
    "tools": [],
    "context": [],
    "state": {},
    "forwardedProps": {},
}
CHAT = {
    "id": "c1",
    "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "x"}]}],
}


def agui_json() -> bytes:
    return json.dumps(
        {**AGUI, "threadId": f"t_{uuid.uuid4().hex}", "runId": uuid.uuid4().hex}
    ).encode()


def chat_json() -> bytes:
    return json.dumps({**CHAT, "id": f"c_{uuid.uuid4().hex}"}).encode()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    journal = SQLiteJournal(str(tmp_path_factory.mktemp("browser") / "runs.db"))
    app = create_app(agent(), journal=journal, allowed_origins=[APP_ORIGIN])
    with Server(app) as running:
        yield running
    journal.close()


@pytest.fixture
def http(server: Server) -> Iterator[httpx.Client]:
    RAN.clear()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def code(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


# --- cross-site requests -------------------------------------------------------------------

SIMPLE_TYPES = [
    "text/plain",
    "text/plain;charset=UTF-8",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
]


@pytest.mark.parametrize("content_type", SIMPLE_TYPES)
@pytest.mark.parametrize("path", ["/agui", "/api/chat"])
def test_a_cross_site_simple_request_never_runs(
    http: httpx.Client, path: str, content_type: str
) -> None:
    """What a form or a no-cors fetch on another site can send without a preflight."""
    body = agui_json() if path == "/agui" else chat_json()
    cross = http.post(path, content=body, headers={"content-type": content_type, "origin": EVIL})
    assert code(cross) == (403, "origin_not_allowed")
    assert "access-control-allow-origin" not in cross.headers
    # the same body from no page at all (curl), or from the server's own page: still not JSON
    own = http.post(
        path,
        content=body,
        headers={"content-type": content_type, "origin": str(http.base_url).rstrip("/")},
    )
    bare = http.post(path, content=body, headers={"content-type": content_type})
    assert code(own) == code(bare) == (415, "unsupported_media_type")
    assert RAN == []


def test_a_body_without_a_content_type_runs_only_outside_a_browser(http: httpx.Client) -> None:
    """A no-cors fetch of a byte array sends no content type, but every browser sends an
    Origin with a POST; curl and scripts send neither."""
    own = str(http.base_url).rstrip("/")
    from_page = http.post("/agui", content=agui_json(), headers={"origin": own})
    assert code(from_page) == (415, "unsupported_media_type")
    assert http.post("/agui", content=agui_json()).status_code == 200
    assert RAN == ["x"]


@pytest.mark.parametrize("origin", [EVIL, "null", "http://127.0.0.1", "https://app.example.evil"])
def test_json_from_a_page_of_another_origin_is_refused(http: httpx.Client, origin: str) -> None:
    response = http.post(
        "/agui", content=agui_json(), headers={"content-type": "application/json", "origin": origin}
    )
    assert code(response) == (403, "origin_not_allowed")
    assert RAN == []


def test_the_servers_own_page_and_an_allowed_origin_may_call(http: httpx.Client) -> None:
    own = str(http.base_url).rstrip("/")
    same = http.post(
        "/agui", content=agui_json(), headers={"content-type": "application/json", "origin": own}
    )
    assert same.status_code == 200 and "access-control-allow-origin" not in same.headers
    allowed = http.post(
        "/api/chat",
        content=chat_json(),
        headers={"content-type": "application/json", "origin": APP_ORIGIN},
    )
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == APP_ORIGIN
    assert allowed.headers["access-control-expose-headers"] == "x-callwright-run-id"
    assert allowed.headers["vary"] == "Origin"
    refused = http.post("/agui", json={"nope": 1}, headers={"origin": APP_ORIGIN})
    assert refused.status_code == 400  # a refusal the allowed page can read
    assert refused.headers["access-control-allow-origin"] == APP_ORIGIN
    assert RAN == ["x", "x"]


# --- CORS preflight ------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/agui", "/api/chat", "/runs/r1/events"])
def test_a_preflight_from_an_allowed_origin_gets_204(http: httpx.Client, path: str) -> None:
    response = http.options(
        path,
        headers={
            "origin": APP_ORIGIN,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type, authorization, x-ai-sdk-version",
        },
    )
    assert response.status_code == 204, response.text
    assert response.headers["access-control-allow-origin"] == APP_ORIGIN
    assert response.headers["access-control-allow-methods"] == "GET, POST"
    assert (
        response.headers["access-control-allow-headers"]
        == "content-type, authorization, x-ai-sdk-version"
    )
    assert response.headers["access-control-allow-credentials"] == "true"
    assert int(response.headers["access-control-max-age"]) > 0
    assert "Origin" in response.headers["vary"]


@pytest.mark.parametrize("path", ["/agui", "/api/chat"])
def test_a_preflight_from_another_origin_is_refused(http: httpx.Client, path: str) -> None:
    response = http.options(path, headers={"origin": EVIL, "access-control-request-method": "POST"})
    assert code(response) == (403, "origin_not_allowed")
    assert not any(h.startswith("access-control-") for h in response.headers)


def test_a_preflight_with_injected_header_names_allows_none(http: httpx.Client) -> None:
    response = http.options(
        "/agui",
        headers={
            "origin": APP_ORIGIN,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type, x-a=b",
        },
    )
    assert response.status_code == 204
    assert "access-control-allow-headers" not in response.headers


# --- DNS rebinding ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method,path",
    [("POST", "/agui"), ("POST", "/api/chat"), ("GET", "/runs/r1/events"), ("GET", "/")],
)
def test_a_dns_rebinding_host_is_refused_on_a_loopback_address(
    http: httpx.Client, method: str, path: str
) -> None:
    """evil.example resolved to 127.0.0.1: the browser sends Host: evil.example:<port>
    and the page's own origin, which would otherwise pass as same-origin."""
    port = http.base_url.port
    headers = {"host": f"evil.example:{port}", "origin": f"http://evil.example:{port}"}
    body = agui_json() if path == "/agui" else chat_json()
    if method == "POST":
        response = http.post(
            path, content=body, headers={**headers, "content-type": "application/json"}
        )
    else:
        response = http.get(path, headers=headers)
    assert code(response) == (400, "invalid_host")
    assert RAN == []


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]"])
def test_loopback_names_are_served_with_any_port(http: httpx.Client, host: str) -> None:
    port = http.base_url.port
    for name in (f"{host}:{port}", f"{host}:9999", host):
        assert http.get("/", headers={"host": name}).status_code == 200, name


@pytest.mark.parametrize("bad", ["", "a@b", "127.0.0.1:99999", "x y", "[::1"])
def test_a_malformed_host_is_refused(http: httpx.Client, bad: str) -> None:
    assert code(http.get("/", headers={"host": bad})) == (400, "invalid_host")


def test_allowed_hosts_replace_the_loopback_rule() -> None:
    app = create_app(agent(), allowed_hosts=["app.example", "*.corp.example", "api.example:8443"])
    with Server(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        status = {
            host: http.get("/", headers={"host": host}).status_code
            for host in [
                "app.example",
                "app.example:8000",
                "a.corp.example",
                "api.example:8443",
                "api.example:8000",
                "evil.example",
                f"127.0.0.1:{server.url.rsplit(':', 1)[1]}",
            ]
        }
    assert status == {
        "app.example": 200,
        "app.example:8000": 200,
        "a.corp.example": 200,
        "api.example:8443": 200,
        "api.example:8000": 400,
        "evil.example": 400,
        f"127.0.0.1:{server.url.rsplit(':', 1)[1]}": 400,
    }


def test_create_app_refuses_wildcard_origins() -> None:
    for origins in (["*"], ["null"]):
        with pytest.raises(ValueError, match="scheme://host"):
            create_app(agent(), allowed_origins=origins)


# --- mounted without middleware ------------------------------------------------------------


def test_mounted_handlers_refuse_on_their_own(tmp_path: Path) -> None:
    endpoints = Endpoints(agent())

    async def agui(request: Request) -> Response:
        return await endpoints.handle_agui(request)

    app = Starlette(routes=[Route("/mine", agui, methods=["POST"])])
    RAN.clear()
    with Server(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        cross = http.post(
            "/mine",
            content=agui_json(),
            headers={"content-type": "application/json", "origin": EVIL},
        )
        plain = http.post("/mine", content=agui_json(), headers={"content-type": "text/plain"})
        port = http.base_url.port
        rebound = http.post(
            "/mine",
            content=agui_json(),
            headers={"content-type": "application/json", "host": f"evil.example:{port}"},
        )
        fine = http.post("/mine", content=agui_json(), headers={"content-type": "application/json"})
    assert code(cross) == (403, "origin_not_allowed")
    assert code(plain) == (415, "unsupported_media_type")
    assert code(rebound) == (400, "invalid_host")
    assert fine.status_code == 200 and RAN == ["x"]


# --- the page ---------------------------------------------------------------------------------


def test_the_page_carries_its_security_headers(http: httpx.Client) -> None:
    page = http.get("/")
    policy = page.headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    style = re.search(rb"<style>(.*?)</style>", asset(PAGE), re.DOTALL)
    assert style is not None
    digest = base64.b64encode(hashlib.sha256(style.group(1)).digest()).decode()
    assert f"'sha256-{digest}'" in directives["style-src"]
    assert b"<script>" not in asset(PAGE)  # no inline script to allow
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert http.get("/playground.js").headers["x-content-type-options"] == "nosniff"


# --- the page in Chromium: CSP intact, the token from #token=, random ids ------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.fail(f"{chromium} is missing: run `make test` (it installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=str(chromium), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        yield launched
        launched.close()


TOKEN = "a-long-enough-page-token"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def test_the_page_works_under_its_policy_with_a_token_and_random_ids(browser: Any) -> None:
    from playwright.sync_api import expect

    RAN.clear()
    app = create_app(agent(), authenticate=bearer_token(TOKEN))
    with Server(app) as server:
        context = browser.new_context()
        page = context.new_page()
        problems: list[str] = []
        page.on(
            "console",
            lambda m: (
                problems.append(m.text) if m.type == "error" and "401" not in m.text else None
            ),
        )
        page.on("pageerror", lambda e: problems.append(str(e)))
        # Every policy violation is a console error, except zod's probe for eval (a
        # `new Function("")` in a try): refused as it should be, zod then runs without it.
        page.add_init_script(
            "document.addEventListener('securitypolicyviolation', (e) => {"
            " if (e.blockedURI !== 'eval') console.error('CSP: ' + e.violatedDirective"
            " + ' ' + e.blockedURI); })"
        )
        sent: list[dict[str, Any]] = []
        page.on(
            "request",
            lambda r: (
                sent.append({"headers": r.headers, "body": r.post_data_json})
                if r.url.endswith("/agui")
                else None
            ),
        )
        page.goto(f"{server.url}/#token={TOKEN}")
        assert page.url == f"{server.url}/"  # the token left the address bar
        page.fill("#input", "touch x")
        page.press("#input", "Enter")
        expect(page.locator(".msg.assistant").last).to_have_text("Done.")
        # a browser without the token is asked for it
        stranger = browser.new_context().new_page()
        stranger.goto(server.url + "/")
        stranger.fill("#input", "touch x")
        stranger.press("#input", "Enter")
        expect(stranger.locator(".notice.error")).to_contain_text("access token")
        stranger.on("dialog", lambda d: d.accept(TOKEN))
        stranger.locator(".notice.error button").click()
        expect(stranger.locator(".msg.assistant").last).to_have_text("Done.")
        context.close()
    assert problems == []
    assert RAN == ["x", "x"]
    first = sent[0]
    assert first["headers"]["authorization"] == f"Bearer {TOKEN}"
    assert UUID.fullmatch(first["body"]["threadId"])
    assert all(UUID.fullmatch(m["id"]) for m in first["body"]["messages"])
