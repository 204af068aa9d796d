"""callwright as an MCP server, driven by the official ``mcp`` Python client.

Over stdio (``callwright mcp``, a subprocess) in both protocol eras (the client's
``auto`` mode speaks 2026-07-28, ``legacy`` the 2025-11-25 handshake), and over
streamable HTTP (``mount_mcp`` beside ``/agui`` in ``create_app``'s app): the agent's
tools are listed and called, progress arrives as MCP progress, a call that needs
approval asks through elicitation (and is refused when the client cannot be asked),
the agent itself runs as one tool, and a cancelled call's tool sees its token.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from callwright.server import bearer_token

AGENT = Path(__file__).resolve().parent / "agent.py"
CLI = [sys.executable, "-m", "callwright.cli", "mcp", "--agent", f"{AGENT}:make_agent"]


class Asked:
    """An elicitation callback that answers with the next of ``replies`` and records what it
    was asked."""

    def __init__(self, *replies: types.ElicitResult) -> None:
        self.replies = list(replies)
        self.questions: list[types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.questions.append(params)
        return self.replies.pop(0)


APPROVE = types.ElicitResult(action="accept", content={"approved": True})
DENY = types.ElicitResult(action="accept", content={"approved": False, "reason": "not today"})


def stdio_client(mode: str, tmp_path: Path, **options: Any) -> Client:
    env = {"CANCELLED_FILE": str(tmp_path / "cancelled")}
    params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "--expose-agent"], env=env)
    return Client(params, mode=mode, **options)


@pytest.fixture(params=["stdio-2026", "stdio-2025", "http"])
def connect(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """``connect(**client_options)``: an MCP client session on callwright's MCP server."""

    def make(**options: Any) -> Client:
        if request.param == "http":
            server = request.getfixturevalue("http_server")
            return Client(server.url, **options)
        mode = "auto" if request.param == "stdio-2026" else "legacy"
        return stdio_client(mode, tmp_path, **options)

    return make


async def test_tools_are_listed_and_called_with_progress(connect: Any) -> None:
    seen: list[tuple[float, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, message))

    async with connect() as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        added = await client.call_tool("add", {"a": 2, "b": 3})
        weather = await client.call_tool("weather", {"city": "Oslo"})
        bad = await client.call_tool("add", {"a": "two"})
        slow = await client.call_tool("slow", {"steps": 3}, progress_callback=progress)
    assert set(listed) == {"add", "weather", "delete_file", "slow", "wait_for_cancel", "helper"}
    assert listed["add"].input_schema["required"] == ["a", "b"]
    assert listed["delete_file"].annotations is not None
    assert listed["delete_file"].annotations.destructive_hint is True
    assert listed["helper"].description == "A helper that adds, deletes and waits."
    assert all("7731" not in (t.description or "") for t in listed.values())
    assert not added.is_error and added.content[0].text == "5"  # type: ignore[union-attr]
    assert weather.structured_content == {"city": "Oslo", "temperature": 21}
    assert bad.is_error and "Invalid arguments" in bad.content[0].text  # type: ignore[union-attr]
    assert slow.content[0].text == "3 steps done"  # type: ignore[union-attr]
    assert seen == [(1, "step 1/3"), (2, "step 2/3"), (3, "step 3/3")]


async def test_approvals_are_asked_through_elicitation(connect: Any) -> None:
    """Denied, approved, and asked again by the agent run as one tool."""
    asked = Asked(DENY, APPROVE, APPROVE)
    seen: list[str | None] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async with connect(elicitation_callback=asked) as client:
        denied = await client.call_tool("delete_file", {"path": "/tmp/a"})
        approved = await client.call_tool("delete_file", {"path": "/tmp/a"})
        chat = await client.call_tool("helper", {"prompt": "hello"})
        deleted = await client.call_tool(
            "helper", {"prompt": "delete /tmp/b"}, progress_callback=progress
        )
    first = asked.questions[0]
    assert first.message == 'Allow delete_file to run with {"path": "/tmp/a"}?'
    assert isinstance(first, types.ElicitRequestFormParams)
    assert first.requested_schema["required"] == ["approved"]
    assert denied.is_error
    assert denied.content[0].text == "Tool call denied: not today"  # type: ignore[union-attr]
    assert not approved.is_error
    assert approved.content[0].text == "deleted /tmp/a"  # type: ignore[union-attr]
    assert chat.content[0].text == "You said: hello"  # type: ignore[union-attr]
    assert deleted.content[0].text == "Done: deleted /tmp/b"  # type: ignore[union-attr]
    assert asked.questions[2].message == 'Allow delete_file to run with {"path": "/tmp/b"}?'
    assert len(asked.questions) == 3
    assert "calling delete_file" in seen


async def test_a_client_that_cannot_ask_is_refused(connect: Any) -> None:
    async with connect() as client:
        result = await client.call_tool("delete_file", {"path": "/tmp/a"})
    assert result.is_error
    assert result.content[0].text == (  # type: ignore[union-attr]
        "Not run: delete_file needs a human's approval, and this MCP client cannot ask its "
        "user (it declared no elicitation capability)."
    )


async def test_cancellation_reaches_the_tool(
    http_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over HTTP the server runs in this process, so the tool's token can be watched."""
    marker = tmp_path / "cancelled"
    monkeypatch.setenv("CANCELLED_FILE", str(marker))
    async with Client(http_server.url) as client:
        with anyio.move_on_after(0.5):
            await client.call_tool("wait_for_cancel", {})
        for _ in range(100):
            if marker.exists():
                break
            await anyio.sleep(0.05)
    assert marker.exists(), "the tool never saw its cancel token"


async def test_the_endpoint_takes_the_servers_authentication(http_server_with: Any) -> None:
    secret = "s3cret-token-for-tests"
    with http_server_with(authenticate=bearer_token(secret)) as server:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        async with httpx2.AsyncClient() as http:
            refused = await http.post(server.url, json=ping)
        headers = {"Authorization": f"Bearer {secret}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(server.url, http_client=http)) as client,
        ):
            tools = await client.list_tools()
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "unauthorized"
    assert "add" in {t.name for t in tools.tools}
