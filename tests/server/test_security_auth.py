"""Authentication over real HTTP: the ``authenticate`` hook (sync or async) refuses every
endpoint with 401 before any run starts, the page stays public, ``deps_factory`` builds
each caller's ``ToolContext.deps``, and ``callwright serve --token`` started as a real
process does the same."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from _sse import frames
from callwright import Agent, ToolContext, tool
from callwright.messages import ToolResultMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import Endpoints, bearer_token, create_app
from callwright.store import SQLiteJournal
from live_server import Server

TOKEN = "a-long-enough-test-token"
MODEL_CALLS: list[int] = []


@tool
def whose(ctx: ToolContext) -> str:
    """The deps the run was given."""
    return repr(ctx.deps)


def script(request: ModelRequest) -> list[Any]:
    MODEL_CALLS.append(1)
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return [f"Saw {last.content}"]
    return [call("whose", {}, id=f"call_{uuid.uuid4().hex[:8]}")]


def agent() -> Agent:
    return Agent(ScriptedModel(script, record=False), [whose], deps="the agent's", deps_type=object)


def agui_body() -> dict[str, Any]:
    return {
        "threadId": f"t_{uuid.uuid4().hex}",
        "runId": f"r_{uuid.uuid4().hex}",
        "messages": [{"id": "u1", "role": "user", "content": "whose"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


def chat_body() -> dict[str, Any]:
    return {
        "id": f"chat_{uuid.uuid4().hex}",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "whose"}]}],
    }


def tool_output(events: list[Any]) -> Any:
    for event in events:
        if event["type"] == "TOOL_CALL_RESULT":
            return event["content"]
        if event["type"] == "tool-output-available":
            return event["output"]
    raise AssertionError(events)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    journal = SQLiteJournal(str(tmp_path / "runs.db"))
    with Server(create_app(agent(), journal=journal, authenticate=bearer_token(TOKEN))) as server:
        yield server.url
    journal.close()


@pytest.mark.parametrize(
    "headers",
    [{}, {"authorization": "Bearer wrong-token-of-the-same-length"}, {"authorization": TOKEN}],
    ids=["none", "wrong", "not-bearer"],
)
def test_every_endpoint_refuses_a_caller_without_the_token(
    served: str, headers: dict[str, str]
) -> None:
    MODEL_CALLS.clear()
    with httpx.Client(base_url=served, timeout=30, headers=headers) as http:
        responses = [
            http.post("/agui", json=agui_body()),
            http.post("/api/chat", json=chat_body()),
            http.get("/runs/anything/events"),
        ]
    for response in responses:
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"] == "Bearer"
        error = response.json()["error"]
        assert error["code"] == "unauthorized" and "Authorization: Bearer" in error["message"]
    assert MODEL_CALLS == []  # refused before any run started


def test_the_token_opens_every_endpoint_and_the_page_stays_public(served: str) -> None:
    auth = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=served, timeout=30) as http:
        agui = http.post("/agui", json=agui_body(), headers=auth)
        chat = http.post("/api/chat", json=chat_body(), headers=auth)
        replay = http.get(f"/runs/{agui.headers['x-callwright-run-id']}/events", headers=auth)
        page, script_ = http.get("/"), http.get("/playground.js")
    assert frames(agui.text)[-1]["type"] == "RUN_FINISHED"
    assert tool_output(frames(chat.text)) == '"the agent\'s"'
    assert replay.status_code == 200 and replay.text == agui.text
    assert page.status_code == 200 and script_.status_code == 200


def test_bearer_token_refuses_a_short_secret() -> None:
    with pytest.raises(ValueError, match="at least 16"):
        bearer_token("short")


async def async_authenticate(request: Request) -> str | None:
    user = request.headers.get("x-user")
    return user if user in ("ann", "bo") else None


async def async_deps(request: Request, principal: str | None) -> dict[str, Any]:
    return {"user": principal, "lang": request.headers.get("accept-language")}


@pytest.mark.parametrize("sync", [True, False], ids=["sync-hooks", "async-hooks"])
def test_the_hooks_name_the_principal_and_build_the_deps(sync: bool) -> None:
    def sync_authenticate(request: Request) -> str | None:
        user = request.headers.get("x-user")
        return user if user in ("ann", "bo") else None

    def sync_deps(request: Request, principal: str | None) -> dict[str, Any]:
        return {"user": principal, "lang": request.headers.get("accept-language")}

    app = create_app(
        agent(),
        authenticate=sync_authenticate if sync else async_authenticate,
        deps_factory=sync_deps if sync else async_deps,
    )
    with Server(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        ann = http.post(
            "/agui", json=agui_body(), headers={"x-user": "ann", "accept-language": "fr"}
        )
        bo = http.post("/api/chat", json=chat_body(), headers={"x-user": "bo"})
        nobody = http.post("/agui", json=agui_body(), headers={"x-user": "eve"})
    assert tool_output(frames(ann.text)) == "{'user': 'ann', 'lang': 'fr'}"
    assert tool_output(frames(bo.text)) == "{'user': 'bo', 'lang': None}"
    assert nobody.status_code == 401


def test_a_mounting_app_may_still_pass_principal_and_deps_itself() -> None:
    """``principal=``/``deps=`` given to a handler win over the hooks (the FastAPI way)."""
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    endpoints = Endpoints(agent(), authenticate=lambda request: None, deps_factory=lambda r, p: p)

    async def agui(request: Request) -> Response:
        return await endpoints.handle_agui(request, principal="zoe", deps={"mine": 1})

    app = Starlette(routes=[Route("/agui", agui, methods=["POST"])])
    with Server(app) as server:
        response = httpx.post(server.url + "/agui", json=agui_body(), timeout=30)
    assert tool_output(frames(response.text)) == "{'mine': 1}"


# --- callwright serve --token, a real process ----------------------------------------------

AGENT_FILE = '''
import uuid
from callwright import Agent, tool
from callwright.messages import ToolResultMessage
from callwright.models import ScriptedModel, call


@tool
def ping() -> str:
    """Answers pong."""
    return "pong"


def script(request):
    if isinstance(request.messages[-1], ToolResultMessage):
        return ["Done."]
    return [call("ping", {}, id=f"call_{uuid.uuid4().hex[:8]}")]


def make_agent():
    return Agent(ScriptedModel(script, record=False), [ping])
'''


CLI = [sys.executable, "-m", "callwright.cli", "serve", "--log-level", "warning"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Serve:
    """``callwright serve`` in a process of its own; what it printed in ``output``."""

    def __init__(self, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> None:
        agent_file = tmp_path / "token_agent.py"
        agent_file.write_text(AGENT_FILE)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tmp_path / "serve.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [*CLI, "--port", str(self.port), "--agent", f"{agent_file}:make_agent", *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
                env={**os.environ, "COLUMNS": "300", **(env or {})},
            )
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(self.url + "/", timeout=2)
                break
            except httpx.TransportError:
                assert self.process.poll() is None, self.log.read_text()
                assert time.monotonic() < deadline, "callwright serve did not come up"
                time.sleep(0.1)
        self.output = self.log.read_text()  # printed before it listened

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.mark.parametrize("how", ["option", "environment"])
def test_callwright_serve_token_refuses_requests_without_it(tmp_path: Path, how: str) -> None:
    if how == "option":
        serve = Serve(tmp_path, "--token", TOKEN)
    else:
        serve = Serve(tmp_path, env={"CALLWRIGHT_TOKEN": TOKEN})
    try:
        assert TOKEN not in serve.output  # a token it was given is not printed
        assert f"{serve.url}/#token=<token>" in serve.output
        with httpx.Client(base_url=serve.url, timeout=30) as http:
            refused = http.post("/agui", json=agui_body())
            refused_chat = http.post("/api/chat", json=chat_body())
            page = http.get("/")
            ok = http.post("/agui", json=agui_body(), headers={"authorization": f"Bearer {TOKEN}"})
    finally:
        serve.stop()
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
    assert refused_chat.status_code == 401
    assert page.status_code == 200
    assert frames(ok.text)[-1]["type"] == "RUN_FINISHED"


def test_callwright_serve_token_alone_makes_one_and_prints_the_pages_url(tmp_path: Path) -> None:
    serve = Serve(tmp_path, "--token")
    try:
        marker = f"{serve.url}/#token="
        assert marker in serve.output, serve.output
        token = serve.output.split(marker)[1].split()[0]
        assert len(token) >= 32
        with httpx.Client(base_url=serve.url, timeout=30) as http:
            refused = http.post("/agui", json=agui_body())
            ok = http.post("/agui", json=agui_body(), headers={"authorization": f"Bearer {token}"})
    finally:
        serve.stop()
    assert refused.status_code == 401
    assert frames(ok.text)[-1]["type"] == "RUN_FINISHED"


def test_callwright_serve_refuses_a_short_token(tmp_path: Path) -> None:
    agent_file = tmp_path / "token_agent.py"
    agent_file.write_text(AGENT_FILE)
    done = subprocess.run(
        [
            *CLI,
            "--token",
            "short",
            "--agent",
            f"{agent_file}:make_agent",
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == "callwright: error: --token: use a token of at least 16 characters\n"
