"""callwright as an MCP server: an agent's server tools, and optionally the agent itself.

``agent_server(agent)`` is an MCP SDK low-level ``Server`` whose tools are the agent's
tools that run on the server (not front-end or latent ones), plus, with
``expose_agent``, one tool that runs the agent's loop on a prompt, described by
``Agent.description`` (never by its instructions: the private system prompt). Both are
carried out the way a run carries a call out (``StepExecutor``: validation, the approval gate,
timeouts, progress), so an MCP client gets what a front end gets:

* progress as MCP progress notifications (a counter, with the status text);
* a call that needs approval, or a question one of the agent's own MCP tools asks,
  put to the client's user by elicitation (``_asking``); refused with a clear error
  when the client cannot be asked;
* cancellation (``notifications/cancelled``) honoured: the call's tools see their
  cancel token and are stopped;
* for a 2026-07-28 client that declares the tasks extension, a long call (or one that
  asks its user) as a task (``_taskbook``): polled, answered and cancelled by the
  client, owned by its principal, bounded in time.

The low-level server rather than the SDK's ``MCPServer`` because the tools are
already described by JSON Schemas, validated and run by callwright.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import decode_header_value

from .. import acts
from ..call import ArgumentBuffer, Call, CallState, Decision, ToolError
from ..context import CancelToken, RunScope
from ..elicitation import InputAnswer
from ..events import Event, PendingCall, ToolCallResult, ToolCallStart, ToolProgress
from ..execute import StepExecutor
from ..run import Agent
from ..state import RunState
from ..tool import Tool
from ..usage import Usage
from . import _asking
from ._asking import MAX_PAUSED_PER_PRINCIPAL, PAUSE_TTL, CannotAsk, Waiting
from ._convert import from_files
from ._owners import principal_of
from ._taskbook import (
    MAX_TASKS_PER_PRINCIPAL,
    TASK_AFTER,
    TASK_TTL,
    ServedTask,
    TaskBook,
)
from ._tasks import TASKS, TaskParams, UpdateTaskParams, declared

log = logging.getLogger("callwright.mcp")

MAX_ROUNDS = 20
"""Questions one call may put to the user before it is given up on."""

AGENT_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"prompt": {"type": "string", "description": "What to ask the agent"}},
    "required": ["prompt"],
}

Reply = Decision | InputAnswer


def _text(text: str, *, error: bool = False, structured: Any = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=structured if isinstance(structured, dict) else None,
        is_error=error,
    )


def agent_description(agent: Agent[Any, Any], tool_name: str) -> str:
    """What an MCP client is told the agent tool does: the agent's ``description``, else
    a neutral line naming it. Never its instructions: they are its private system prompt."""
    if agent.description:
        return agent.description
    return (
        f"Ask the {agent.name or tool_name} agent: give it a prompt, "
        "and it answers using its own tools."
    )


class _Progress:
    """A call's progress as MCP progress notifications: a rising count and the status;
    once the call is a task the client holds, as the task's status message."""

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self.ctx = ctx
        self.count = 0
        self.task: ServedTask | None = None

    async def report(self, event: Event) -> None:
        if isinstance(event, ToolProgress):
            text = event.text
        elif isinstance(event, ToolCallStart):
            text = f"calling {event.tool_name}"
        else:
            return
        self.count += 1
        if self.task is not None:
            self.task.progress(text)
            if self.task.listed:
                return
        with contextlib.suppress(Exception):  # a client that went away misses progress only
            await self.ctx.session.report_progress(self.count, None, text)


async def _follow(
    events: AsyncIterator[Event],
    progress: _Progress,
    cancel: Callable[[], None],
    grace: float,
) -> list[Event]:
    """Drain a run's (or a step's) events, reporting progress, into a list.

    When the client cancels, the run is told first (its tools see their cancel token)
    and given ``grace`` seconds to wind down; only then is it stopped. Draining in a
    task of its own is what makes that possible: a cancelled ``async for`` would close
    the generator, and with it the tools, at once.
    """

    async def drain() -> list[Event]:
        seen: list[Event] = []
        async for event in events:
            await progress.report(event)
            seen.append(event)
        return seen

    task = asyncio.ensure_future(drain())
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        cancel()
        with anyio.CancelScope(shield=True), anyio.move_on_after(grace + 1):
            await asyncio.wait({task})
        task.cancel()
        raise


class _Runner(Protocol):
    """One MCP call carried out in rounds: each round ends with a result, or with calls
    paused on a human (answered in the next round)."""

    async def round(
        self, replies: dict[str, Reply], progress: _Progress
    ) -> types.CallToolResult | list[PendingCall]: ...


class _ToolRunner:
    """One of the agent's tools, called as a run would call it (a one-call step)."""

    def __init__(self, agent: Agent[Any, Any], tool: Tool, arguments: dict[str, Any]) -> None:
        self.agent = agent
        self.tool = tool
        self.arguments = arguments
        self.call_id = f"mcp_{uuid.uuid4().hex}"

    async def round(
        self, replies: dict[str, Reply], progress: _Progress
    ) -> types.CallToolResult | list[PendingCall]:
        call = Call(self.call_id, self.tool.name, 0, self.tool, CallState.INPUT_AVAILABLE)
        call.buffer = ArgumentBuffer(json.dumps(self.arguments))
        try:
            acts.restore_input(call, self.arguments)
        except ToolError as exc:
            return _text(exc.model_text(), error=True)
        agent = self.agent
        scope = RunScope(
            run_id=f"run_{uuid.uuid4().hex}",
            thread_id=f"mcp_{uuid.uuid4().hex}",
            toolbox=agent.toolbox,
            state=RunState({}),
            deps=agent.deps,
            cancel=CancelToken(),
            usage=Usage(),
            model=agent.model,
        )
        execution = agent.settings().execution
        executor = StepExecutor([call], scope, execution, replies)
        events = await _follow(
            executor.run(),
            progress,
            lambda: scope.cancel.cancel("the MCP client cancelled the call"),
            execution.cancel_grace,
        )
        for event in events:
            if isinstance(event, ToolCallResult):
                failed = event.state != "output-available"
                served = _text(event.content, error=failed, structured=event.output)
                served.content += from_files(event.files)
                return served
        return executor.pending


class _AgentRunner:
    """The agent's loop on a prompt: paused runs resume with the user's answers."""

    def __init__(self, agent: Agent[Any, Any], prompt: str) -> None:
        self.agent = agent
        self.prompt: str | None = prompt
        self.messages: list[Any] = []

    async def round(
        self, replies: dict[str, Reply], progress: _Progress
    ) -> types.CallToolResult | list[PendingCall]:
        run = self.agent.start(self.prompt, messages=self.messages, decisions=replies)
        self.prompt = None

        def cancel() -> None:
            run.cancel("the MCP client cancelled the call")

        await _follow(run.events(), progress, cancel, self.agent.cancel_grace)
        result = run.result
        assert result is not None
        self.messages = result.messages
        if result.status == "paused":
            return result.pending
        if result.error is not None:
            return _text(f"The agent failed: {result.error.message}", error=True)
        output = result.output
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return _text(text or "", structured=output)


class AgentServer:
    """The MCP request handlers serving one agent; ``server`` is the SDK ``Server``."""

    def __init__(
        self,
        agent: Agent[Any, Any],
        *,
        name: str | None = None,
        expose_agent: bool | str = False,
        tools: Sequence[str] | None = None,
        max_paused_per_principal: int = MAX_PAUSED_PER_PRINCIPAL,
        task_after: float | None = TASK_AFTER,
        task_ttl: float = TASK_TTL,
        max_tasks_per_principal: int = MAX_TASKS_PER_PRINCIPAL,
    ) -> None:
        self.agent = agent
        self.name = name or agent.name or "callwright"
        self.agent_tool: str | None = None
        """The name the agent is served under as one tool (None: it is not)."""
        if isinstance(expose_agent, str):
            self.agent_tool = expose_agent
        elif expose_agent:
            self.agent_tool = agent.name or "agent"
        self.only = set(tools) if tools is not None else None
        self.waiting = Waiting(max_paused_per_principal)
        self.server: Server[Any] = Server(
            self.name,
            version=_version(),
            instructions=agent.description,  # never the system prompt
            on_list_tools=self.list_tools,
        )
        self.server.add_request_handler("tools/call", types.CallToolRequestParams, self.call_tool)
        self.task_after = task_after
        """Seconds a call runs before it becomes a task (None: calls never do)."""
        self.tasks = TaskBook(task_ttl, max_tasks_per_principal)
        if task_after is not None:
            self.server.extensions[TASKS] = {}
            self.server.add_request_handler("tasks/get", TaskParams, self.get_task)
            self.server.add_request_handler("tasks/update", UpdateTaskParams, self.update_task)
            self.server.add_request_handler("tasks/cancel", TaskParams, self.cancel_task)
        security = RequestStateSecurity(
            keys=[os.urandom(32)], ttl=PAUSE_TTL, bind_principal=principal_of
        )
        boundary = RequestStateBoundary(security, default_audience=self.name)
        self.server.middleware.append(boundary)

    def _served(self) -> list[Tool]:
        box = self.agent.toolbox
        return [
            t
            for t in box
            if not t.client
            and box.executor_for(t) is not None
            and (self.only is None or t.name in self.only)
        ]

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        await self.agent.toolbox.ready()
        listed = [_describe(t) for t in self._served()]
        if self.agent_tool is not None:
            listed.append(
                types.Tool(
                    name=self.agent_tool,
                    description=agent_description(self.agent, self.agent_tool),
                    input_schema=AGENT_TOOL_SCHEMA,
                )
            )
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        progress = _Progress(ctx)
        if _asking.modern(ctx) and params.request_state is not None:
            waiting = self.waiting.take(principal_of(ctx), params.request_state)
            if waiting is None:
                return _text(
                    "The question expired or was answered already; call again.", error=True
                )
            runner, pending = waiting
            replies = _asking.answered(pending, _asking.answers(params))
            if replies is None:
                return _text("The call came back without an answer to every question.", error=True)
            return await self._drive(ctx, runner, replies, progress)
        runner = await self._runner(params)
        if isinstance(runner, types.CallToolResult):
            return runner
        if self.task_after is not None and _asking.modern(ctx) and declared(_capabilities(ctx)):
            return await self._maybe_task(ctx, runner, progress)
        return await self._drive(ctx, runner, {}, progress)

    # --- tasks (the tasks extension, see _taskbook) ---------------------------------------

    async def _maybe_task(
        self, ctx: ServerRequestContext[Any, Any], runner: _Runner, progress: _Progress
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        """Run the call; still running after ``task_after`` seconds, or asking the user,
        it goes on as a task and the client gets the task's handle."""
        task = self.tasks.new(principal_of(ctx))
        if task is None:
            return await self._drive(ctx, runner, {}, progress)
        progress.task = task
        work = asyncio.ensure_future(self._task_work(task, runner, progress, _asking.can_ask(ctx)))
        task.work = work
        asked = asyncio.ensure_future(task.asked.wait())
        try:
            await asyncio.wait(
                {work, asked}, timeout=self.task_after, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:  # the client went away before it had a task
            work.cancel()
            raise
        finally:
            asked.cancel()
        if work.done() and not task.asked.is_set():
            result = work.result()
            if result is None:  # failed: the JSON-RPC error the call would have had
                raise MCPError(types.INTERNAL_ERROR, task.message or "The call failed.")
            return result
        self.tasks.add(task)
        return task.wire("task")

    async def _task_work(
        self, task: ServedTask, runner: _Runner, progress: _Progress, can_ask: bool
    ) -> types.CallToolResult | None:
        try:
            result = await self._task_rounds(task, runner, progress, can_ask)
        except asyncio.CancelledError:
            task.cancelled("The call was cancelled.")
            raise
        except Exception:  # the client sees a JSON-RPC error, never the traceback
            log.exception("MCP task %s failed", task.id)
            task.fail(types.INTERNAL_ERROR, "The call failed inside the server.")
            return None
        task.complete(result)
        return result

    async def _task_rounds(
        self, task: ServedTask, runner: _Runner, progress: _Progress, can_ask: bool
    ) -> types.CallToolResult:
        """``_drive`` for a task: a paused round waits ``input_required`` on the task."""
        replies: dict[str, Reply] = {}
        for _ in range(MAX_ROUNDS):
            outcome = await runner.round(replies, progress)
            if isinstance(outcome, types.CallToolResult):
                return outcome
            questions = [_asking.question_for(p) for p in outcome]
            if any(q is None for q in questions) or not can_ask:
                return _refused(outcome)
            answers = await task.ask(outcome, [q for q in questions if q is not None])
            replies = {p.call_id: _asking.reply_for(p, answers[p.call_id]) for p in outcome}
        return _text(f"Gave up after {MAX_ROUNDS} rounds of questions.", error=True)

    def _task(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> ServedTask:
        """The caller's task the request names, or the error the spec gives."""
        if not declared(_capabilities(ctx)):
            raise MCPError(
                types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                "Missing required client capability",
                {"requiredCapabilities": {"extensions": {TASKS: {}}}},
            )
        headers = getattr(ctx.request, "headers", None)
        if headers is not None and _asking.modern(ctx):
            named = decode_header_value(headers.get("mcp-name"))
            if named != params.task_id:
                raise MCPError(
                    types.HEADER_MISMATCH,
                    "mcp-name header does not match the request body's 'taskId' parameter",
                )
        task = self.tasks.get(principal_of(ctx), params.task_id)
        if task is None:
            raise MCPError(types.INVALID_PARAMS, "Failed to retrieve task: Task not found")
        return task

    async def get_task(
        self, ctx: ServerRequestContext[Any, Any], params: TaskParams
    ) -> dict[str, Any]:
        return self._task(ctx, params).wire()

    async def update_task(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams
    ) -> dict[str, Any]:
        self._task(ctx, params).update(params.input_responses)
        return {}

    async def cancel_task(
        self, ctx: ServerRequestContext[Any, Any], params: TaskParams
    ) -> dict[str, Any]:
        self._task(ctx, params).stop()
        return {}

    async def _runner(self, params: types.CallToolRequestParams) -> _Runner | types.CallToolResult:
        arguments = dict(params.arguments or {})
        if self.agent_tool is not None and params.name == self.agent_tool:
            prompt = arguments.get("prompt")
            if not isinstance(prompt, str) or not prompt:
                return _text("Invalid arguments: prompt must be a non-empty string", error=True)
            return _AgentRunner(self.agent, prompt)
        await self.agent.toolbox.ready()
        tool = next((t for t in self._served() if t.name == params.name), None)
        if tool is None:
            return _text(f"Unknown tool: {params.name}", error=True)
        return _ToolRunner(self.agent, tool, arguments)

    async def _drive(
        self,
        ctx: ServerRequestContext[Any, Any],
        runner: _Runner,
        replies: dict[str, Reply],
        progress: _Progress,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Rounds until a result; a paused round asks the user (now, or in the result)."""
        for _ in range(MAX_ROUNDS):
            outcome = await runner.round(replies, progress)
            if isinstance(outcome, types.CallToolResult):
                return outcome
            questions = [_asking.question_for(p) for p in outcome]
            if any(q is None for q in questions) or not _asking.can_ask(ctx):
                return _refused(outcome)
            asked = [q for q in questions if q is not None]
            if _asking.modern(ctx):
                nonce = self.waiting.put(principal_of(ctx), (runner, outcome))
                return _asking.ask_later(asked, nonce)
            try:
                replies = {
                    p.call_id: _asking.reply_for(p, await _asking.ask_now(ctx, q))
                    for p, q in zip(outcome, asked, strict=True)
                }
            except CannotAsk:
                return _refused(outcome)
        return _text(f"Gave up after {MAX_ROUNDS} rounds of questions.", error=True)


def _capabilities(ctx: ServerRequestContext[Any, Any]) -> types.ClientCapabilities | None:
    return ctx.session.client_capabilities


def _refused(pending: list[PendingCall]) -> types.CallToolResult:
    first = pending[0]
    if first.kind == "client":
        why = f"{first.tool_name} runs in a front end, which an MCP client is not"
    elif first.kind == "approval":
        why = f"{first.tool_name} needs a human's approval"
    else:
        why = f"{first.tool_name} asks the user a question"
    return _text(
        f"Not run: {why}, and this MCP client cannot ask its user (it declared no "
        "elicitation capability).",
        error=True,
    )


def _describe(tool: Tool) -> types.Tool:
    output = tool.output_schema
    annotations = None
    if tool.requires_approval is True or tool.idempotent:
        annotations = types.ToolAnnotations(
            destructive_hint=True if tool.requires_approval is True else None,
            idempotent_hint=True if tool.idempotent else None,
        )
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description or None,
        input_schema=tool.parameters,
        output_schema=output
        if isinstance(output, dict) and output.get("type") == "object"
        else None,
        annotations=annotations,
    )


def _version() -> str:
    from ._client import _client_info

    return _client_info().version


def agent_server(
    agent: Agent[Any, Any],
    *,
    name: str | None = None,
    expose_agent: bool | str = False,
    tools: Sequence[str] | None = None,
) -> Server[Any]:
    """The agent's server tools (``tools`` names a subset) as an MCP SDK ``Server``;
    ``expose_agent`` adds one tool (named by it, or after the agent) that runs the loop."""
    return AgentServer(agent, name=name, expose_agent=expose_agent, tools=tools).server
