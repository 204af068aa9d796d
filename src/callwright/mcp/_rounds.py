"""A 2026-07-28 server's questions, which ride the call's result (multi-round-trip).

A server of the 2026-07-28 revision that needs the user answers ``tools/call`` with an
``InputRequiredResult``: its questions (``inputRequests``, by key) and an opaque, sealed
``requestState``. The client calls the tool again with the answers by the same keys
(``inputResponses``; a refusal is ``{"action": "decline"}`` or ``"cancel"``) and the state
echoed back; the server may ask again. Nothing stays open between the rounds, so what a
paused call needs to go on is a ``Round``, kept as the state of the question the run
pauses on (``InputRequest.state``, which a journal keeps): the answer resumes the call
in this process or in one started after a restart, as long as the server still accepts
its state (one whose request-state key is its process's own refuses state minted before
it restarted, and the call ends with an error result that says so).

Driven by hand rather than by the SDK's ``Client.call_tool``, which runs the rounds only
while it waits, inside one process: here the session's ``call_tool`` returns the
``InputRequiredResult``. A run pauses on one question per call, so the questions of one
round are put to the human one after another and the tool is called again once all are
answered; requests no human answers (sampling, roots) go to the session's callbacks at
once.

A server of the tasks extension (``_tasks``) may answer the call with a task instead:
it is polled here (``follow``) until it ends, its status messages are the call's
progress, and its questions pause the run the same way, as a ``Round`` that names the
task, so the answers go to that task (``tasks/update``) rather than to a new call. The
task's id is kept with the call (``keep``: the call's handle, in a journal) before it is
polled, so that a call whose process stopped re-attaches to the task after a restart
(``reattach``) rather than calling the tool again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from ..call import ToolError
from ..elicitation import InputAnswer, InputRequest
from ._tasks import (
    Acknowledged,
    CancelTaskRequest,
    DetailedTask,
    GetTaskRequest,
    TaskHandle,
    TaskParams,
    UpdateTaskParams,
    UpdateTaskRequest,
)

MAX_ROUNDS = 10
"""Rounds a call may take without a human (state-only or sampling rounds) before it
fails; the SDK's own bound."""

BACKOFF = (0.05, 0.25)
"""First and longest wait (seconds) before calling again after a round with no
questions, only state (the SDK's backoff)."""

MAX_PAGES = 100
"""Pages of a listing read at most when a call is sent again after ``HEADER_MISMATCH``."""

_RESPONSES: TypeAdapter[types.InputResponses] = TypeAdapter(types.InputResponses)
_INPUT: TypeAdapter[types.InputRequest] = TypeAdapter(types.InputRequest)

Progress = ProgressFnT
Keep = Callable[[str], None]
"""Told a task's id as soon as the call becomes (or goes on with) that task."""


def _ignore(task_id: str) -> None:
    return None


class TaskGone(Exception):
    """A task a call re-attaches to is not known to the server (any more)."""


def task_handle(server: str, task_id: str) -> dict[str, Any]:
    """What a call saves to re-attach to its task (``ToolContext.save_handle``): the
    server, the task, and when the call started following it (its deadline holds across
    restarts)."""
    return {"mcp_server": server, "mcp_task": task_id, "since": time.time()}


def handled_task(handle: Any, server: str) -> tuple[str, float] | None:
    """The task id and start time of a handle this server's call saved; None for any
    other (another server's, or a tool's own)."""
    if not isinstance(handle, dict) or handle.get("mcp_server") != server:
        return None
    task_id, since = handle.get("mcp_task"), handle.get("since")
    if not isinstance(task_id, str) or not isinstance(since, int | float):
        return None
    return task_id, float(since)


class Round(BaseModel):
    """A 2026 call between its rounds: what it takes to call again, and the questions of
    the round still to put to the human."""

    server: str
    """The MCP server's name (``MCPServer.name``)."""
    tool: str
    """The tool's name on the server."""
    arguments: dict[str, Any]
    """The call's arguments, as the server bound its state to them."""
    request_state: str | None = Field(default=None, alias="requestState")
    """The server's ``requestState``, echoed back byte for byte."""
    answers: dict[str, Any] = Field(default_factory=dict)
    """Responses of this round so far, by key, as JSON (``inputResponses``)."""
    asking: dict[str, Any] = Field(default_factory=dict)
    """The round's questions not yet answered, by key, as JSON (``ElicitRequest``s)."""
    key: str | None = None
    """Which of them the human is asked now (named, as a journal keeps JSON keys sorted)."""
    task: str | None = None
    """The server's task the call became (the tasks extension): the answers go to it
    (``tasks/update``) and it is polled again, rather than the tool called again."""
    seen: list[str] = Field(default_factory=list)
    """The task's question keys already put to the human (a poll may show them again)."""

    model_config = {"populate_by_name": True}

    def state(self) -> dict[str, Any]:
        """As ``InputRequest.state`` (JSON, for a journal)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def responses(self) -> types.InputResponses:
        return _RESPONSES.validate_python(self.answers)


def modern(client: Client) -> bool:
    """Whether the session speaks the 2026-07-28 revision (questions ride the result)."""
    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


def waiting(answer: InputAnswer) -> Round | None:
    """The round a human's answer is for, or None for a question of a 2025 session."""
    state = answer.request.state if answer.request is not None else None
    if not isinstance(state, dict) or "asking" not in state:
        return None
    try:
        return Round.model_validate(state)
    except ValidationError:
        return None


def question(round_: Round) -> InputRequest:
    """The question the round asks now, as the run's pending input request."""
    assert round_.key is not None
    asked = types.ElicitRequest.model_validate(round_.asking[round_.key])
    return input_request(asked.params, round_.state())


def input_request(params: types.ElicitRequestParams, state: dict[str, Any]) -> InputRequest:
    """An MCP elicitation (form or URL mode) as a question a run pauses on."""
    if isinstance(params, types.ElicitRequestURLParams):
        return InputRequest(params.message, state=state, url=params.url)
    return InputRequest(params.message, dict(params.requested_schema), state)


def answered(round_: Round, answer: InputAnswer) -> Round:
    """The round with the human's answer to its current question."""
    key = round_.key
    if key is None or key not in round_.asking:
        raise ToolError(
            f"The question of MCP server {round_.server!r} is not known; call the tool again."
        )
    content = answer.content if answer.action == "accept" else None
    try:
        reply = types.ElicitResult(action=answer.action, content=content)
    except ValidationError:
        raise ToolError(
            "The answer does not fit an MCP elicitation (flat text, numbers, booleans or "
            "lists of text)."
        ) from None
    rest = {k: v for k, v in round_.asking.items() if k != key}
    answers = {
        **round_.answers,
        key: reply.model_dump(mode="json", by_alias=True, exclude_none=True),
    }
    return round_.model_copy(
        update={"answers": answers, "asking": rest, "key": next(iter(rest), None)}
    )


async def drive(
    client: Client, round_: Round, progress: Progress, keep: Keep = _ignore
) -> types.CallToolResult | Round:
    """Call the tool (again, with the round's answers and state) until it has a result
    or asks the human; sampling and state-only rounds are taken here. ``keep`` is told
    the task the call became, before it is polled."""
    if round_.task is not None:
        keep(round_.task)
        await _update(client, round_.task, round_.responses())
        return await follow(client, round_, round_.task, progress)
    responses = round_.responses() or None
    state = round_.request_state
    delay = BACKOFF[0]
    for _ in range(MAX_ROUNDS):
        result = await _send(client, round_, responses, state, progress)
        if isinstance(result, types.CallToolResult):
            return result
        if isinstance(result, TaskHandle):
            keep(result.task_id)
            return await follow(client, round_, result.task_id, progress)
        requests = result.input_requests or {}
        questions = {k: r for k, r in requests.items() if isinstance(r, types.ElicitRequest)}
        others = {k: r for k, r in requests.items() if k not in questions}
        responses = await _dispatch(client, others) if others else None
        state = result.request_state
        if questions:
            return Round(
                server=round_.server,
                tool=round_.tool,
                arguments=round_.arguments,
                requestState=state,
                answers={
                    k: v.model_dump(mode="json", by_alias=True, exclude_none=True)
                    for k, v in (responses or {}).items()
                },
                asking={
                    k: q.model_dump(mode="json", by_alias=True, exclude_none=True)
                    for k, q in questions.items()
                },
                key=next(iter(questions)),
            )
        if not others:
            await anyio.sleep(delay)
            delay = min(delay * 2, BACKOFF[1])
    raise ToolError(
        f"MCP server {round_.server!r} asked for more input {MAX_ROUNDS} times without a result."
    )


async def _send(
    client: Client,
    round_: Round,
    responses: types.InputResponses | None,
    state: str | None,
    progress: Progress,
) -> types.CallToolResult | types.InputRequiredResult | TaskHandle:
    """One ``tools/call``; after ``HEADER_MISMATCH`` (the tool's listed schema is stale)
    the tool is listed again and the call sent once more, as the SDK's own client does."""
    for attempt in (1, 2):
        try:
            result = await client.session.call_tool(
                round_.tool,
                round_.arguments,
                progress_callback=progress,
                input_responses=responses,
                request_state=state,
                allow_input_required=True,
                allow_claimed=True,
            )
            if not isinstance(
                result, types.CallToolResult | types.InputRequiredResult | TaskHandle
            ):
                raise ToolError(f"MCP server {round_.server!r} answered with an unknown result.")
            return result
        except MCPError as exc:
            if exc.code != types.HEADER_MISMATCH or attempt == 2:
                raise
            await _relist(client, round_.tool)
    raise AssertionError("unreachable")  # pragma: no cover


async def _relist(client: Client, tool: str) -> None:
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        cursor = page.next_cursor
        if cursor is None or any(t.name == tool for t in page.tools):
            return


async def _dispatch(client: Client, requests: types.InputRequests) -> types.InputResponses:
    """Requests no human answers, through the session's callbacks (sampling: the run's
    model, see ``_sampling``)."""
    out: types.InputResponses = {}
    for key, request in requests.items():
        ctx = ClientRequestContext(session=client.session, request_id=key)
        reply = await client.session.dispatch_input_request(ctx, request)
        if isinstance(reply, types.ErrorData):
            raise MCPError.from_error_data(reply)
        out[key] = reply
    return out


def refused_state(exc: MCPError) -> bool:
    """Whether the server refused the echoed ``requestState`` (expired, or sealed under a
    key it no longer has)."""
    data = exc.data
    return (
        exc.code == types.INVALID_PARAMS
        and isinstance(data, dict)
        and data.get("reason") == "invalid_request_state"
    )


POLL = (0.05, 5.0)
"""Shortest and longest wait (seconds) between two polls of a task, whatever the server
suggests."""

CANCEL_GRACE = 5.0
"""Seconds ``tasks/cancel`` may take when the call is stopped (a server that does not
answer is not waited on longer)."""


async def follow(
    client: Client, round_: Round, task_id: str, progress: Progress
) -> types.CallToolResult | Round:
    """Poll the server's task until it ends (its result, or a ToolError) or asks the human
    a question it has not asked before (the round the run pauses on). Its status messages
    are the call's progress; a call stopped while it polls cancels the task."""
    seen = list(round_.seen)
    said: str | None = None
    count = 0
    try:
        while True:
            task = await client.session.send_request(
                GetTaskRequest(params=TaskParams(task_id=task_id)), DetailedTask
            )
            if task.status_message and task.status_message != said:
                said = task.status_message
                count += 1
                await progress(count, None, said)
            if task.status == "completed":
                return types.CallToolResult.model_validate(task.result or {"content": []})
            if task.status in ("failed", "cancelled"):
                why = (task.error or {}).get("message") or task.status_message or task.status
                raise ToolError(f"MCP server {round_.server!r}: the task {task.status}: {why}")
            if task.status == "input_required":
                asked = await _task_questions(client, round_, task_id, task, seen)
                if asked is not None:
                    return asked
            wait = (task.poll_interval_ms or 1000) / 1000
            await anyio.sleep(min(max(wait, POLL[0]), POLL[1]))
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await cancel(client, task_id)
        raise


async def cancel(client: Client, task_id: str) -> None:
    """Ask the server to stop the task (``tasks/cancel``), waiting ``CANCEL_GRACE`` at
    most."""
    with anyio.move_on_after(CANCEL_GRACE):
        await client.session.send_request(
            CancelTaskRequest(params=TaskParams(task_id=task_id)), Acknowledged
        )


async def reattach(
    client: Client, round_: Round, task_id: str, progress: Progress
) -> types.CallToolResult | Round:
    """Follow a task the call became before its process stopped (``follow``); raises
    ``TaskGone`` when the server does not know it (it restarted, or its TTL passed)."""
    try:
        await client.session.send_request(
            GetTaskRequest(params=TaskParams(task_id=task_id)), DetailedTask
        )
    except MCPError as exc:
        if exc.code == types.CONNECTION_CLOSED:
            raise
        raise TaskGone(exc.message) from None
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await cancel(client, task_id)
        raise
    return await follow(client, round_, task_id, progress)


async def _task_questions(
    client: Client, round_: Round, task_id: str, task: DetailedTask, seen: list[str]
) -> Round | None:
    """The task's new questions as a round the run pauses on (None: nothing new to ask);
    requests no human answers (sampling, roots) are answered here at once."""
    fresh = {k: r for k, r in (task.input_requests or {}).items() if k not in seen}
    seen.extend(fresh)
    try:
        requests = {k: _INPUT.validate_python(r) for k, r in fresh.items()}
    except ValidationError:
        raise ToolError(
            f"MCP server {round_.server!r} asked for input it cannot be given."
        ) from None
    questions = {k: r for k, r in requests.items() if isinstance(r, types.ElicitRequest)}
    others = {k: r for k, r in requests.items() if k not in questions}
    if others:
        await _update(client, task_id, await _dispatch(client, others))
    if not questions:
        return None
    return Round(
        server=round_.server,
        tool=round_.tool,
        arguments=round_.arguments,
        task=task_id,
        seen=seen,
        asking={
            k: q.model_dump(mode="json", by_alias=True, exclude_none=True)
            for k, q in questions.items()
        },
        key=next(iter(questions)),
    )


async def _update(client: Client, task_id: str, responses: types.InputResponses) -> None:
    params = UpdateTaskParams(
        task_id=task_id,
        input_responses={
            k: v.model_dump(mode="json", by_alias=True, exclude_none=True)
            for k, v in responses.items()
        },
    )
    await client.session.send_request(UpdateTaskRequest(params=params), Acknowledged)
