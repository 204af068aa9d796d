"""Toolbox: the ordered registry of tools, the activities that carry them out, and
the per-run overlay of client (front-end) tools.

Last definition wins (the Acts rule): redefining a name replaces the older tool
in place of its registration order, and the model never sees the older one.

Whatever ``executor_for`` returns is async: a sync tool function, sync executor or
sync activity is wrapped to run on the bounded tool threads (``_threads``), never on
the event loop, and a timed-out one is abandoned there, not waited for.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

from ._threads import tool_threads
from .context import ToolContext
from .delegate import run_delegate
from .tool import Executor, Tool, tool_from_function

Kind = Literal["explicit", "latent", "client"]


class ToolConflict(ValueError):
    """A client tool tried to replace a server tool of the same name."""


class Toolbox:
    """Ordered tools keyed by name, and activities keyed by name."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._activities: dict[str, Executor] = {}
        self.delegates: dict[str, Any] = {}  # name -> Agent that carries `_delegate` calls
        self.version = 0  # bumped on every change, so composed schemas can be cached
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
        for t in tools:
            existing = self._tools.get(t.name)
            if existing is not None and not existing.client and not allow_override:
                raise ToolConflict(
                    f"client tool {t.name!r} would replace the server tool of the same name"
                )
            t.client = True
            overlay._tools.pop(t.name, None)
            overlay._tools[t.name] = t
        return overlay

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
