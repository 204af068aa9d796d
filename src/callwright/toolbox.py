"""Toolbox: the ordered registry of tools, the activities that carry them out, and
the per-run overlay of client (front-end) tools.

Last definition wins (the Acts rule): redefining a name replaces the older tool
in place of its registration order, and the model never sees the older one.

Whatever ``executor_for`` returns is async: a sync tool function, sync executor or
sync activity is wrapped to run on the bounded tool threads (``_threads``), never on
the event loop, and a timed-out one is abandoned there, not waited for.

A *toolset* (an MCP server, ``callwright.mcp.MCPServer``) is a source of tools known
only at run time: a run awaits ``Toolbox.ready()`` before its first model turn, which
lists each toolset not listed yet (or changed since) and registers its tools like any
others, so a redefinition still wins and client tools still may not replace them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal, Protocol, runtime_checkable

from ._errors import CallwrightError
from ._threads import tool_threads
from .context import ToolContext
from .delegate import run_delegate
from .tool import Executor, Tool, tool_from_function

Kind = Literal["explicit", "latent", "client"]


class ToolConflict(CallwrightError, ValueError):
    """A client tool tried to replace a server tool of the same name."""

    code = "tool_conflict"


CLIENT_TOOL_CONFLICT = "client tool {!r} would replace the server tool of the same name"
"""``ToolConflict``'s message, for a tool's name."""


class ToolsetUnavailable(CallwrightError, RuntimeError):
    """A toolset could not list its tools (an MCP server that cannot be reached); the run
    ends with an error that says which and why."""

    code = "toolset_unavailable"


@runtime_checkable
class Toolset(Protocol):
    """A source of tools listed at run time, such as an MCP server."""

    @property
    def needs_listing(self) -> bool:
        """True before the first listing and after the source says its tools changed."""
        ...

    async def list_tools(self) -> list[Tool]:
        """The source's tools now; raises ``ToolsetUnavailable`` when it cannot say."""
        ...

    async def aclose(self) -> None:
        """Let go of what the source holds open (a session, a subprocess)."""
        ...


class Toolbox:
    """Ordered tools keyed by name, and activities keyed by name."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._activities: dict[str, Executor] = {}
        self.delegates: dict[str, Any] = {}  # name -> Agent that carries `_delegate` calls
        self.version = 0  # bumped on every change, so composed schemas can be cached
        self.toolsets: list[Toolset] = []
        self._listed: dict[int, dict[str, Tool]] = {}  # id(toolset) -> what it registered
        self._base: Toolbox | None = None  # a run's overlay: the toolbox it copies
        self._client_tools: list[Tool] = []
        self._allow_override = False
        for item in tools:
            self.add(item)

    # registry ------------------------------------------------------------------

    def add(self, item: Tool | Callable[..., Any]) -> Tool:
        """Register a tool (or a plain function, made into one); a redefinition wins."""
        new = item if isinstance(item, Tool) else tool_from_function(item)
        self._tools.pop(new.name, None)
        self._tools[new.name] = new
        self.version += 1
        return new

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)
        self.version += 1

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    # activities ----------------------------------------------------------------

    def activity(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register code for tools that name it in ``_activity`` or share its name.

        The function receives ``(call, ctx)``: the call's arguments plus its meta
        fields as one dict, and the ToolContext.
        """

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.add_activity(name, fn)
            return fn

        return register

    def add_activity(self, name: str, fn: Callable[..., Any]) -> None:
        self._activities[name] = _activity_executor(fn)
        self.version += 1  # a tool may turn from latent to explicit

    def add_delegate(self, name: str, agent: Any) -> None:
        """Register an agent that runs calls whose ``_delegate`` names it."""
        self.delegates[name] = agent

    def executor_for(self, tool: Tool) -> Executor | None:
        """The code that carries out a call: the tool's own, a delegate, its `_activity`,
        or an activity of its name."""
        if tool.executor is not None:
            return tool.executor
        if tool.client:
            return None
        if "_delegate" in tool.meta:
            return run_delegate
        if tool.activity:
            return self._activities.get(tool.activity)
        return self._activities.get(tool.name)

    def kind(self, tool: Tool, executor: Executor | None = None) -> Kind:
        """explicit, latent or client (pass the tool's executor if already looked up)."""
        if tool.client and tool.executor is None:
            return "client"
        if executor is None:
            executor = self.executor_for(tool)
        return "explicit" if executor is not None else "latent"

    # toolsets ------------------------------------------------------------------

    def add_toolset(self, toolset: Toolset) -> None:
        """Add a source of tools listed at run time (an MCP server)."""
        self.toolsets.append(toolset)

    async def ready(self) -> None:
        """List the toolsets not listed yet or changed since; a no-op without toolsets.

        A run awaits it before its first model turn. An overlay readies the toolbox it
        copies and takes in what changed there, its client tools still on top.
        """
        if self._base is not None:
            before = self._base.version
            await self._base.ready()
            if self._base.version != before:
                self._tools = dict(self._base._tools)
                self._overlay(self._client_tools, self._allow_override)
                self.version += 1
            return
        for toolset in self.toolsets:
            if toolset.needs_listing:
                self._register(toolset, await toolset.list_tools())

    def _register(self, toolset: Toolset, tools: list[Tool]) -> None:
        """A toolset's listing replaces its previous one; a listed name redefines any other."""
        before = self._listed.get(id(toolset), {})
        now = {t.name: t for t in tools}
        for name, old in before.items():
            if name not in now and self._tools.get(name) is old:  # not redefined since
                self.remove(name)
        self._listed[id(toolset)] = now
        for listed in tools:
            self.add(listed)

    async def aclose(self) -> None:
        """Close every toolset (MCP sessions, their subprocesses)."""
        for toolset in self.toolsets:
            await toolset.aclose()

    # per-run overlay -----------------------------------------------------------

    def with_client_tools(self, tools: Iterable[Tool], *, allow_override: bool = False) -> Toolbox:
        """A copy for one run with front-end tools added.

        A client tool may not silently replace a server tool: that is a
        ToolConflict unless the server opts in with ``allow_override``.
        """
        overlay = Toolbox()
        overlay._tools = dict(self._tools)
        overlay._activities = self._activities
        overlay.delegates = self.delegates
        overlay.toolsets = self.toolsets
        overlay._base = self
        overlay._client_tools = list(tools)
        overlay._allow_override = allow_override
        overlay._overlay(overlay._client_tools, allow_override)
        return overlay

    def server_tool_names(self) -> frozenset[str]:
        """The names a client tool may not take without ``allow_override``: a server can
        refuse a request's conflicting tools before anything else is done for it."""
        return frozenset(name for name, t in self._tools.items() if not t.client)

    def _overlay(self, tools: list[Tool], allow_override: bool) -> None:
        for t in tools:
            existing = self._tools.get(t.name)
            if existing is not None and not existing.client and not allow_override:
                raise ToolConflict(CLIENT_TOOL_CONFLICT.format(t.name))
            t.client = True
            self._tools.pop(t.name, None)
            self._tools[t.name] = t

    def select(self, names: Iterable[str] | None) -> list[Tool]:
        """The tools active for a step (all of them when ``names`` is None)."""
        if names is None:
            return list(self._tools.values())
        wanted = set(names)
        return [t for t in self._tools.values() if t.name in wanted]


def _activity_executor(fn: Callable[..., Any]) -> Executor:
    is_async = inspect.iscoroutinefunction(fn)

    async def run(arguments: Any, ctx: ToolContext | None) -> Any:
        assert ctx is not None  # activities read the call's meta from it
        call = {**ctx.meta, **arguments}
        if is_async:
            return await fn(call, ctx)
        return await tool_threads.run(fn, call, ctx)  # never on the event loop

    return run
