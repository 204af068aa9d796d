"""callwright's MCP endpoint in the 2026-07-28 revision, over real HTTP.

Raw requests (``httpx``) for what a client must get exactly: ``server/discover``
answered with the tasks extension among the capabilities; calls without a handshake or
a session; ``Mcp-Method``/``Mcp-Name`` that disagree with the body refused with 400
(``HEADER_MISMATCH``), for ``tools/call`` and for ``tasks/*`` (whose ``Mcp-Name`` is the
task id). The tasks extension with the ``mcp`` SDK's 2026 client: a long call becomes a
task whose progress is its status message, that asks its user ``input_required`` and
is answered with ``tasks/update``, that ``tasks/cancel`` stops (its tool sees the
cancel token), that expires when it never finishes, and that another principal can
neither read nor cancel.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from starlette.requests import Request

from callwright.mcp._tasks import (
    TASKS,
    Acknowledged,
    CancelTaskRequest,
    DetailedTask,
    GetTaskRequest,
    TaskHandle,
    TaskParams,
    TasksExtension,
    UpdateTaskParams,
    UpdateTaskRequest,
)

MODERN = "2026-07-28"
AGENT = Path(__file__).resolve().parent / "agent.py"
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"


def two_users(request: Request) -> str | None:
    given = request.headers.get("authorization", "")
    return {f"Bearer {ALICE}": "alice", f"Bearer {BOB}": "bob"}.get(given)


def envelope(params: dict[str, Any], capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    return {**params, "_meta": meta}


def post(
    url: str,
    method: str,
    params: dict[str, Any],
    *,
    name: str | None = None,
    header_method: str | None = None,
    capabilities: dict[str, Any] | None = None,
) -> httpx.Response:
    """One 2026-07-28 request: the body's method, the headers as given (the body's
    method in ``Mcp-Method`` unless ``header_method`` says otherwise)."""
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": MODERN,
        "mcp-method": header_method or method,
    }
    if name is not None:
        headers["mcp-name"] = name
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": envelope(params, capabilities)}
    with httpx.Client(timeout=30) as http:
        return http.post(url, json=body, headers=headers)


def answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer, sent as JSON or as the last event of a stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(response.json())


@asynccontextmanager
async def client(url: str, token: str | None = None, **options: Any) -> AsyncIterator[Client]:
    """The SDK's 2026 client declaring the tasks extension (as ``token``'s principal)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(
            streamable_http_client(url, http_client=http),
            extensions=[TasksExtension()],
            **options,
        ) as connected,
    ):
        yield connected


async def call(connected: Client, name: str, arguments: dict[str, Any]) -> Any:
    return await connected.session.call_tool(name, arguments, allow_claimed=True)


async def get(connected: Client, task_id: str) -> DetailedTask:
    request = GetTaskRequest(params=TaskParams(task_id=task_id))
    return await connected.session.send_request(request, DetailedTask)


async def until_done(connected: Client, task_id: str, seen: list[DetailedTask]) -> DetailedTask:
    """Poll (at the interval the server suggests) until the task ends; every answer kept."""
    with anyio.fail_after(30):
        while True:
            task = await get(connected, task_id)
            seen.append(task)
            if task.status in ("completed", "failed", "cancelled"):
                return task
            await anyio.sleep((task.poll_interval_ms or 100) / 1000 / 5)


def test_server_discover_names_the_tasks_extension(http_server: Any) -> None:
    response = post(http_server.url, "server/discover", {})
    result = answer(response)["result"]
    assert response.status_code == 200
    assert "mcp-session-id" not in response.headers
    assert MODERN in result["supportedVersions"]
    assert result["capabilities"]["extensions"] == {TASKS: {}}
    assert "tools" in result["capabilities"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "helper"


def test_calls_need_no_handshake_and_no_session(http_server: Any) -> None:
    params = {"name": "add", "arguments": {"a": 2, "b": 3}}
    first = post(http_server.url, "tools/call", params, name="add")
    second = post(http_server.url, "tools/call", params, name="add")
    for response in (first, second):
        assert response.status_code == 200
        assert "mcp-session-id" not in response.headers
        result = answer(response)["result"]
        assert result["content"][0]["text"] == "5"
        assert result["resultType"] == "complete"


def test_headers_that_disagree_with_the_body_are_refused(http_server: Any) -> None:
    url = http_server.url
    params = {"name": "add", "arguments": {"a": 2, "b": 3}}
    wrong_name = post(url, "tools/call", params, name="delete_file")
    no_name = post(url, "tools/call", params)
    wrong_method = post(url, "tools/call", params, name="add", header_method="tools/list")
    task = {"taskId": "abc"}
    wrong_task = post(url, "tasks/get", task, name="xyz", capabilities={"extensions": {TASKS: {}}})
    for response, said in [
        (wrong_name, "mcp-name header does not match the request body's 'name'"),
        (no_name, "mcp-name header does not match the request body's 'name'"),
        (wrong_method, "mcp-method header does not match the request body's method"),
        (wrong_task, "mcp-name header does not match the request body's 'taskId'"),
    ]:
        assert response.status_code == 400, response.text
        error = answer(response)["error"]
        assert error["code"] == types.HEADER_MISMATCH
        assert error["message"].startswith(said)
        assert "Traceback" not in response.text


def test_tasks_need_the_extension_declared(http_server: Any) -> None:
    refused = post(http_server.url, "tasks/get", {"taskId": "abc"}, name="abc")
    error = answer(refused)["error"]
    assert error["code"] == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert error["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}


async def test_a_long_call_is_a_task_with_progress(http_server_with: Any) -> None:
    seen: list[DetailedTask] = []
    with http_server_with(task_after=0.2) as server:
        async with client(server.url) as connected:
            quick = await call(connected, "add", {"a": 2, "b": 3})
            handle = await call(connected, "slow", {"steps": 40})
            done = await until_done(connected, handle.task_id, seen)
    assert isinstance(quick, types.CallToolResult)  # done within task_after: no task
    assert isinstance(handle, TaskHandle)
    assert handle.status == "working"
    assert handle.ttl_ms == 3_600_000
    messages = [t.status_message or "" for t in seen if t.status == "working"]
    assert any(m.startswith("step ") and m.endswith("/40") for m in messages), messages
    assert done.status == "completed"
    assert done.result is not None
    assert done.result["content"][0]["text"] == "40 steps done"


async def test_a_task_asks_its_user_and_is_answered_with_an_update(
    http_server_with: Any,
) -> None:
    async def never(context: Any, params: Any) -> types.ElicitResult:
        raise AssertionError("a task's question comes by tasks/get, not by elicitation")

    seen: list[DetailedTask] = []
    with http_server_with(task_after=5) as server:
        async with client(server.url, elicitation_callback=never) as connected:
            handle = await call(connected, "delete_file", {"path": "/tmp/a"})
            asking = await get(connected, handle.task_id)
            bad = UpdateTaskRequest(
                params=UpdateTaskParams(
                    task_id=handle.task_id, input_responses={"q1": {"action": "maybe"}}
                )
            )
            with pytest.raises(MCPError) as refused:
                await connected.session.send_request(bad, Acknowledged)
            approval = {"action": "accept", "content": {"approved": True}}
            update = UpdateTaskRequest(
                params=UpdateTaskParams(
                    task_id=handle.task_id,
                    input_responses={"unknown": approval, "q1": approval},
                )
            )
            acknowledged = await connected.session.send_request(update, Acknowledged)
            done = await until_done(connected, handle.task_id, seen)
    assert isinstance(handle, TaskHandle)  # asked before task_after: a task at once
    assert handle.status == "input_required"
    assert asking.status == "input_required"
    assert asking.input_requests is not None
    question = asking.input_requests["q1"]
    assert question["method"] == "elicitation/create"
    assert question["params"]["message"] == 'Allow delete_file to run with {"path": "/tmp/a"}?'
    assert question["params"]["requestedSchema"]["required"] == ["approved"]
    assert refused.value.code == types.INVALID_PARAMS
    assert refused.value.message == "inputResponses['q1'] is not an answer to an elicitation"
    assert acknowledged is not None
    assert done.status == "completed"
    assert done.result is not None
    assert done.result["content"][0]["text"] == "deleted /tmp/a"


async def test_a_cancelled_task_stops_its_tool(
    http_server_with: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "cancelled"
    monkeypatch.setenv("CANCELLED_FILE", str(marker))
    seen: list[DetailedTask] = []
    with http_server_with(task_after=0.2) as server:
        async with client(server.url) as connected:
            handle = await call(connected, "wait_for_cancel", {})
            cancel = CancelTaskRequest(params=TaskParams(task_id=handle.task_id))
            await connected.session.send_request(cancel, Acknowledged)
            done = await until_done(connected, handle.task_id, seen)
    assert done.status == "cancelled"
    assert marker.exists(), "the tool never saw its cancel token"


async def test_a_task_that_never_finishes_expires(
    http_server_with: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "cancelled"
    monkeypatch.setenv("CANCELLED_FILE", str(marker))
    seen: list[DetailedTask] = []
    with http_server_with(task_after=0.1, task_ttl=1.0) as server:
        async with client(server.url) as connected:
            handle = await call(connected, "wait_for_cancel", {})
            done = await until_done(connected, handle.task_id, seen)
            for _ in range(100):  # kept a ttl after it ended, then forgotten
                try:
                    await get(connected, handle.task_id)
                except MCPError as exc:
                    gone = exc
                    break
                await anyio.sleep(0.1)
    assert handle.ttl_ms == 1000
    assert done.status == "failed"
    assert done.error == {
        "code": types.INTERNAL_ERROR,
        "message": "The task expired after 1 seconds.",
    }
    assert gone.code == types.INVALID_PARAMS
    assert gone.message == "Failed to retrieve task: Task not found"
    for _ in range(100):
        if marker.exists():
            break
        await anyio.sleep(0.05)
    assert marker.exists(), "the expired task's tool never saw its cancel token"


async def test_another_principal_can_neither_read_nor_cancel_a_task(
    http_server_with: Any,
) -> None:
    seen: list[DetailedTask] = []
    refusals: list[tuple[int, str]] = []
    with http_server_with(task_after=0.2, authenticate=two_users) as server:
        async with client(server.url, ALICE) as alice, client(server.url, BOB) as bob:
            handle = await call(alice, "slow", {"steps": 30})
            for task_id in (handle.task_id, "forged-" + handle.task_id[7:]):
                for request in (
                    GetTaskRequest(params=TaskParams(task_id=task_id)),
                    CancelTaskRequest(params=TaskParams(task_id=task_id)),
                ):
                    try:
                        await bob.session.send_request(request, DetailedTask)
                    except MCPError as exc:
                        refusals.append((exc.code, exc.message))
            done = await until_done(alice, handle.task_id, seen)
    assert refusals == [(types.INVALID_PARAMS, "Failed to retrieve task: Task not found")] * 4
    assert done.status == "completed"  # bob's cancel did not reach it


def test_tasks_are_not_offered_when_turned_off(http_server_with: Any) -> None:
    with http_server_with(task_after=None) as server:
        discovered = answer(post(server.url, "server/discover", {}))["result"]
        refused = post(
            server.url,
            "tasks/get",
            {"taskId": "a"},
            name="a",
            capabilities={"extensions": {TASKS: {}}},
        )
    assert "extensions" not in discovered["capabilities"]
    assert answer(refused)["error"]["code"] == types.METHOD_NOT_FOUND


async def test_a_stdio_client_gets_tasks_too() -> None:
    command = [sys.executable, "-m", "callwright.cli", "mcp", "--agent", f"{AGENT}:make_agent"]
    params = StdioServerParameters(command=command[0], args=command[1:])
    seen: list[DetailedTask] = []
    async with Client(params, mode="auto", extensions=[TasksExtension()]) as connected:
        handle = await call(connected, "slow", {"steps": 40})
        done = await until_done(connected, handle.task_id, seen)
    assert isinstance(handle, TaskHandle)  # past the default task_after (1 s)
    assert done.status == "completed"
    assert done.result is not None
    assert done.result["content"][0]["text"] == "40 steps done"
