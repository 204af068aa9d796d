"""MCP sessions and paused MCP calls belong to the principal that made them, over real HTTP.

``mount_mcp(..., authenticate=...)`` with two principals (two bearer tokens): bob, with
his own valid token and alice's session id or ``requestState``, is answered as if they
did not exist (the same 404 as an id never issued; the same refusal as a forged state),
and alice's session and paused call go on. Each principal has its own bounds: bob's
1,001 paused calls do not push out alice's, and his sessions are capped without
touching hers. An idle session expires and frees its place.
"""

from __future__ import annotations

import json
import time
import uuid
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from starlette.requests import Request

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
LEGACY = "2025-11-25"
APPROVE = types.ElicitResult(action="accept", content={"approved": True})
DENY = types.ElicitResult(action="accept", content={"approved": False, "reason": "not today"})


def two_users(request: Request) -> str | None:
    """Two principals, one token each."""
    given = request.headers.get("authorization", "")
    return {f"Bearer {ALICE}": "alice", f"Bearer {BOB}": "bob"}.get(given)


def headers(token: str, session: str | None = None) -> dict[str, str]:
    sent = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": LEGACY,
    }
    if session is not None:
        sent["mcp-session-id"] = session
    return sent


def rpc(method: str, params: dict[str, Any] | None = None, id: int | None = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id is not None:
        message["id"] = id
    return message


def messages(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an answer, sent as JSON or as an event stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [json.loads(line[5:]) for line in response.text.splitlines() if line[:5] == "data:"]
    return [response.json()] if response.content else []


def open_session(http: httpx.Client, url: str, token: str) -> httpx.Response:
    """initialize (and, when it succeeds, the initialized notification) as ``token``."""
    params = {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    }
    opened = http.post(url, json=rpc("initialize", params), headers=headers(token))
    if opened.status_code == 200:
        session = opened.headers["mcp-session-id"]
        done = http.post(
            url, json=rpc("notifications/initialized", id=None), headers=headers(token, session)
        )
        assert done.status_code == 202, done.text
    return opened


def shown(response: httpx.Response | tuple[int, str]) -> tuple[int, str]:
    if isinstance(response, tuple):
        return response
    return response.status_code, response.text


def stream(http: httpx.Client, url: str, sent: dict[str, str]) -> tuple[int, str]:
    """A GET of the session's event stream: its status, and its body unless it opened."""
    with http.stream("GET", url, headers=sent) as answer:
        if answer.status_code == 200:
            return 200, "(an open event stream)"
        return answer.status_code, answer.read().decode()


def test_another_principal_can_neither_use_nor_end_a_session(http_server_with: Any) -> None:
    with http_server_with(authenticate=two_users) as server, httpx.Client(timeout=30) as http:
        url = server.url
        session = open_session(http, url, ALICE).headers["mcp-session-id"]
        unknown = uuid.uuid4().hex
        call = rpc("tools/call", {"name": "delete_file", "arguments": {"path": "/tmp/a"}})
        for target in (session, unknown):
            listed = http.post(url, json=rpc("tools/list"), headers=headers(BOB, target))
            called = http.post(url, json=call, headers=headers(BOB, target))
            streamed = stream(http, url, headers(BOB, target))
            ended = http.delete(url, headers=headers(BOB, target))
            if target == session:
                foreign = [shown(r) for r in (listed, called, streamed, ended)]
            else:
                never = [shown(r) for r in (listed, called, streamed, ended)]
        still = http.post(url, json=rpc("tools/list"), headers=headers(ALICE, session))
        own_end = http.delete(url, headers=headers(ALICE, session))
    assert [status for status, _ in foreign] == [404, 404, 404, 404]
    assert foreign == never  # byte for byte what an id never issued gets: no oracle
    assert still.status_code == 200
    assert "delete_file" in {t["name"] for t in messages(still)[0]["result"]["tools"]}
    assert own_end.status_code == 200


async def test_another_principal_cannot_answer_a_question_asked_in_a_session(
    http_server_with: Any,
) -> None:
    """2025-11-25: the approval is asked mid-call (``elicitation/create``); bob posts an
    approval under its request id into alice's session while she is asked."""
    seen: dict[str, Any] = {}

    async def remember_session(response: httpx2.Response) -> None:
        seen.setdefault("session", response.headers.get("mcp-session-id"))

    async def alice_is_asked(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        approval = {"action": "accept", "content": {"approved": True}}
        answer = {"jsonrpc": "2.0", "id": context.request_id, "result": approval}
        async with httpx2.AsyncClient(timeout=30) as bob:
            sent = await bob.post(server.url, json=answer, headers=headers(BOB, seen["session"]))
        seen["bob"] = sent.status_code
        return DENY

    with http_server_with(authenticate=two_users) as server:
        async with (
            httpx2.AsyncClient(
                headers={"authorization": f"Bearer {ALICE}"},
                timeout=30,
                event_hooks={"response": [remember_session]},
            ) as http,
            Client(
                streamable_http_client(server.url, http_client=http),
                mode="legacy",
                elicitation_callback=alice_is_asked,
            ) as alice,
        ):
            result = await alice.call_tool("delete_file", {"path": "/tmp/a"})
    assert seen["bob"] == 404
    assert result.is_error
    assert result.content[0].text == "Tool call denied: not today"  # type: ignore[union-attr]


async def never_asked(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    raise AssertionError("a 2026-07-28 call's question rides its result")


@asynccontextmanager
async def modern_client(url: str, token: str) -> Any:
    """A 2026-07-28 client (questions ride the result) that can be asked."""
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(
            streamable_http_client(url, http_client=http), elicitation_callback=never_asked
        ) as client,
    ):
        yield client


async def pause(client: Client, path: str) -> types.InputRequiredResult:
    paused = await client.session.call_tool(
        "delete_file", {"path": path}, allow_input_required=True
    )
    assert isinstance(paused, types.InputRequiredResult)
    return paused


async def answer(
    client: Client, path: str, paused: types.InputRequiredResult, reply: types.ElicitResult
) -> Any:
    key = next(iter(paused.input_requests or {}))
    return await client.session.call_tool(
        "delete_file",
        {"path": path},
        input_responses={key: reply},
        request_state=paused.request_state,
        allow_input_required=True,
    )


def refusal(exc: MCPError) -> tuple[int, str, Any]:
    return exc.code, str(exc), exc.data


async def test_another_principal_cannot_answer_a_paused_call(http_server_with: Any) -> None:
    """2026-07-28: bob sends alice's ``requestState`` back with an approval."""
    with http_server_with(authenticate=two_users) as server:
        async with (
            modern_client(server.url, ALICE) as alice,
            modern_client(server.url, BOB) as bob,
        ):
            paused = await pause(alice, "/tmp/a")
            with pytest.raises(MCPError) as taken:
                await answer(bob, "/tmp/a", paused, APPROVE)
            assert paused.request_state is not None
            forged = paused.model_copy(update={"request_state": paused.request_state[:-4] + "AAAA"})
            with pytest.raises(MCPError) as garbage:
                await answer(bob, "/tmp/a", forged, APPROVE)
            own = await answer(alice, "/tmp/a", paused, DENY)
    assert refusal(taken.value) == refusal(garbage.value)  # no oracle
    assert isinstance(own, types.CallToolResult)
    assert own.content[0].text == "Tool call denied: not today"  # type: ignore[union-attr]


async def test_one_principals_pauses_do_not_push_out_anothers(http_server_with: Any) -> None:
    """Bob pauses 1,001 calls: his own oldest is forgotten (1,000 a principal), never
    alice's."""
    with http_server_with(authenticate=two_users) as server:
        async with (
            modern_client(server.url, ALICE) as alice,
            modern_client(server.url, BOB) as bob,
        ):
            paused = await pause(alice, "/tmp/a")
            bobs_first = await pause(bob, "/tmp/b0")
            for first in range(1, 1001, 50):
                async with anyio.create_task_group() as group:
                    for n in range(first, min(first + 50, 1001)):
                        group.start_soon(pause, bob, f"/tmp/b{n}")
            own = await answer(alice, "/tmp/a", paused, APPROVE)
            pushed_out = await answer(bob, "/tmp/b0", bobs_first, APPROVE)
    assert isinstance(own, types.CallToolResult)
    assert not own.is_error
    assert own.content[0].text == "deleted /tmp/a"  # type: ignore[union-attr]
    assert pushed_out.is_error
    assert "expired" in pushed_out.content[0].text  # type: ignore[union-attr]


def test_sessions_are_capped_per_principal(http_server_with: Any) -> None:
    with (
        http_server_with(authenticate=two_users, max_sessions_per_principal=2) as server,
        httpx.Client(timeout=30) as http,
    ):
        url = server.url
        bobs = [open_session(http, url, BOB) for _ in range(3)]
        alices = open_session(http, url, ALICE)
        ended = http.delete(url, headers=headers(BOB, bobs[0].headers["mcp-session-id"]))
        again = open_session(http, url, BOB)
    assert [r.status_code for r in bobs] == [200, 200, 429]
    assert bobs[2].json()["error"]["code"] == "too_many_sessions"
    assert "mcp-session-id" not in bobs[2].headers
    assert alices.status_code == 200
    assert ended.status_code == 200
    assert again.status_code == 200


def test_an_idle_session_expires_and_frees_its_place(http_server_with: Any) -> None:
    with (
        http_server_with(
            authenticate=two_users, session_idle_timeout=2.0, max_sessions_per_principal=1
        ) as server,
        httpx.Client(timeout=30) as http,
    ):
        url = server.url
        session = open_session(http, url, ALICE).headers["mcp-session-id"]
        ping = rpc("ping")
        alive = http.post(url, json=ping, headers=headers(ALICE, session))
        second = open_session(http, url, ALICE)
        status = [alive.status_code]
        for _ in range(20):  # each ping that finds it alive restarts its idle time
            time.sleep(3.0)
            status.append(http.post(url, json=ping, headers=headers(ALICE, session)).status_code)
            if status[-1] == 404:
                break
        reopened = open_session(http, url, ALICE)
    assert alive.status_code == 200
    assert second.status_code == 429
    assert status[-1] == 404
    assert reopened.status_code == 200
