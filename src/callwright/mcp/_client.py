"""``MCPServer``: an MCP server whose tools an agent calls, as a toolset of the agent.

Its tools are listed when the first run starts (the session opens then), and listed
again before the next run once the server says its list changed. A call to one of
them is an ordinary call: streamed arguments, approval (by the tool's hints unless
``requires_approval`` says otherwise), progress to ``ctx.progress``, cancellation
passed on to the server, a timeout, error results the model can read, and the
server's questions (elicitation) put to the human through the run's pause. Sampling
is served only when asked for (``sampling=``, see ``_sampling``). A 2026-07-28 server
may answer a call with a task (the tasks extension, declared on every request): the
call polls it, and cancelling the call cancels the task (``_rounds.follow``). The task's
id is the call's handle: a journaled run recovered after a restart re-attaches to the
task (``ToolContext.resumed_handle``); when the server no longer knows it, the call is
in doubt (``InDoubt``) unless the tool is idempotent (then it is called again). The
call's ``timeout`` counts from when it first started following the task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._errors import ConfigurationError
from ..call import IN_DOUBT, InDoubt, TimedOut, ToolError, ToolResult
from ..context import ToolContext
from ..tool import Executor, Tool
from ..toolbox import ToolsetUnavailable
from ._calls import Calls
from ._convert import ApprovalRule, idempotent, model_name, to_tool
from ._rounds import TaskGone, cancel, handled_task, waiting
from ._sampling import Sampling
from ._session import Connection, why
from ._tasks import TasksExtension

log = logging.getLogger("callwright.mcp")

MAX_PAGES = 100
"""Pages of a tool listing read at most: a server whose cursor never ends cannot hang a run."""


def _client_info() -> types.Implementation:
    try:
        release = version("callwright")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        release = "0"
    return types.Implementation(name="callwright", version=release)


@dataclass(eq=False)
class MCPServer:
    """An MCP server as a source of an agent's tools: ``Agent(..., toolsets=[server])``.

    Make one with ``MCPServer.stdio(command, args, env)`` (a subprocess speaking over
    its stdin/stdout) or ``MCPServer.http(url, headers)`` (streamable HTTP). One session
    per process is opened on first use and reopened after a failure; close it with
    the agent (``async with agent``, ``await agent.aclose()``, or the server app's
    lifespan).
    """

    name: str
    """What logs and error messages call the server."""
    process: StdioServerParameters | None = None
    """How to start a local server (``MCPServer.stdio``)."""
    url: str | None = None
    """A streamable-HTTP server's endpoint (``MCPServer.http``)."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """HTTP headers sent with every request (an ``Authorization`` header, say)."""
    prefix: str | None = None
    """Prepended to each tool's name (``prefix_name``) to keep servers' tools apart."""
    requires_approval: ApprovalRule = None
    """True, False, a function of the listed MCP tool, or None to follow its hints:
    ``destructiveHint`` asks a human first, ``readOnlyHint`` (or no hint) does not."""
    timeout: float | None = None
    """Seconds a call may take (None: the agent's ``Limits.tool_timeout``)."""
    input_timeout: float = 600.0
    """Seconds a call waits for a human's answer to its server's question; then the
    server is told the human cancelled."""
    sampling: Sampling | bool = False
    """Let the server sample the run's model (``sampling/createMessage``), bounded by a
    ``Sampling`` (True: its defaults). Off: the capability is not declared."""
    listed: dict[str, types.Tool] = field(default_factory=dict, init=False, repr=False)
    """The MCP tools of the last listing, by the name the model calls them (their
    annotations and schemas as the server gave them, for ``callwright tools``)."""
    _connection: Connection = field(init=False, repr=False)
    _calls: Calls = field(init=False, repr=False)
    _listed: bool = field(default=False, init=False, repr=False)
    _stale: bool = field(default=False, init=False, repr=False)
    _listed_on: Client | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if (self.process is None) == (self.url is None):
            raise ConfigurationError(
                "an MCPServer needs a command (MCPServer.stdio) or a URL (.http)"
            )
        self._connection = Connection(self.name, self._client, self._watch)
        limits = Sampling() if self.sampling is True else self.sampling or None
        self._calls = Calls(self.name, self.input_timeout, limits)

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        cwd: str | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server started as ``command args...`` with ``env`` added to a minimal
        environment (the SDK passes on only PATH, HOME and the like)."""
        params = StdioServerParameters(
            command=command, args=list(args), env=dict(env) if env else None, cwd=cwd
        )
        return cls(name or command, process=params, **options)

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server at a streamable-HTTP ``url``."""
        return cls(name or url, url=url, headers=dict(headers or {}), **options)

    # --- the toolset --------------------------------------------------------------------

    @property
    def needs_listing(self) -> bool:
        """Before the first listing, and after the server said its tools changed."""
        return not self._listed or self._stale

    async def list_tools(self) -> list[Tool]:
        """The server's tools as callwright tools (the session opens if it is not open)."""
        self._stale = False
        try:
            client = await self._connection.open()
            listed = await self._list(client)
            self._listed_on = client
        except ToolsetUnavailable:
            self._stale = True
            raise
        except (MCPError, OSError) as exc:
            self._stale = True
            raise ToolsetUnavailable(
                f"MCP server {self.name!r} could not list its tools: {why(exc)}"
            ) from None
        self._listed = True
        tools = []
        self.listed = {}
        for mcp_tool in listed:
            name = model_name(mcp_tool.name, self.prefix)
            made = to_tool(
                mcp_tool,
                name,
                self._executor(mcp_tool.name, idempotent(mcp_tool)),
                self.requires_approval,
                self.timeout,
            )
            if made is not None:
                tools.append(made)
                self.listed[name] = mcp_tool
        return tools

    async def aclose(self) -> None:
        """Close the session (a stdio server exits); the next use opens a new one."""
        await self._connection.close()

    async def __aenter__(self) -> MCPServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- calls --------------------------------------------------------------------------

    def _executor(self, mcp_name: str, rerun: bool) -> Executor:
        """``rerun``: whether the tool may be called again when its task is gone."""

        async def call_mcp_tool(arguments: Any, ctx: ToolContext[Any] | None) -> ToolResult:
            answer = ctx.answer if ctx is not None else None
            handle = ctx.resumed_handle if ctx is not None and answer is None else None
            task = handled_task(handle, self.name)
            round_ = waiting(answer) if answer is not None else None
            if answer is not None and round_ is None:  # a 2025 question: its call is parked
                return await self._calls.resume(answer, ctx, self._connection.client, self._broken)
            try:
                client = await self._connection.open()
            except ToolsetUnavailable as exc:
                raise ToolError(str(exc)) from None
            if answer is not None and round_ is not None:  # a 2026 question: call again
                return await self._calls.answer(round_, answer, ctx, client, self._broken)
            if task is not None:  # its process stopped while the call followed a task
                try:
                    return await self._reattach(client, mcp_name, dict(arguments), task, ctx)
                except TaskGone as gone:
                    if not rerun:
                        raise InDoubt(self._gone(gone)) from None
            return await self._calls.call(client, mcp_name, dict(arguments), ctx, self._broken)

        return call_mcp_tool

    async def _reattach(
        self,
        client: Client,
        mcp_name: str,
        arguments: dict[str, Any],
        task: tuple[str, float],
        ctx: ToolContext[Any] | None,
    ) -> ToolResult:
        """Follow the call's task again, within what is left of the call's ``timeout``."""
        task_id, since = task
        left = None if self.timeout is None else self.timeout - (time.time() - since)
        if left is not None and left <= 0:  # the deadline passed while the process was down
            with contextlib.suppress(MCPError, OSError):  # best effort: the call ends anyway
                await cancel(client, task_id)
            raise TimedOut(self.timeout or 0)
        try:
            async with asyncio.timeout(left):
                return await self._calls.reattach(
                    client, mcp_name, arguments, task_id, ctx, self._broken
                )
        except TimeoutError:
            assert self.timeout is not None
            raise TimedOut(self.timeout) from None

    def _gone(self, gone: TaskGone) -> str:
        return (
            f"{IN_DOUBT} MCP server {self.name!r} no longer knows the task this call was "
            f"following when the server stopped ({gone}), so whether it took effect is "
            "unknown. Do not call it again just to retry: that may repeat its effect. Tell "
            "the user; they can check the external system and then ask to retry or not."
        )

    async def _broken(self, client: Client) -> None:
        """A call found the session dead: it reopens on the next use, and is listed again."""
        self._stale = True
        await self._connection.broken(client)

    async def _list(self, client: Client) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    # --- the session --------------------------------------------------------------------

    def _client(self) -> Client:
        return Client(
            self._transport(),
            elicitation_callback=self._calls.elicit,
            sampling_callback=self._calls.sample if self._calls.sampling else None,
            message_handler=self._on_message,
            client_info=_client_info(),
            cache=None,
            extensions=[TasksExtension()],
        )

    def _transport(self) -> Any:
        if self.process is not None:
            return self.process
        assert self.url is not None
        return _http(self.url, dict(self.headers))

    async def _watch(self, client: Client) -> None:
        """A 2026 server tells of list changes on a ``subscriptions/listen`` stream (a 2025
        one sends ``notifications/tools/list_changed``, see ``_on_message``). A session
        reopened after a failure may serve other tools: they are listed again."""
        if self._listed and client is not self._listed_on:
            self._stale = True
        capabilities = client.session.server_capabilities
        tools = capabilities.tools if capabilities is not None else None
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not (
            tools and tools.list_changed
        ):
            return
        try:
            async with client.listen(tools_list_changed=True) as changes:
                async for _ in changes:
                    self._stale = True
        except Exception as exc:  # the stream is a convenience: calls still work without it
            log.info("MCP server %r: no change notifications: %s", self.name, why(exc))

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._stale = True
        elif isinstance(message, Exception):
            log.warning("MCP server %r: %s", self.name, why(message))


@contextlib.asynccontextmanager
async def _http(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """Streamable HTTP with our headers, the HTTP client closed with the transport (the
    SDK's timeouts: 30 s to connect, 5 minutes between reads of a held-open stream)."""
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams
