"""``_delegate``: a call carried out by a sub-agent in a clean room (spec A9, Q18, Q19).

The sub-agent gets its own instructions, tools and model, the call's arguments
as an input message, and only the parent context that ``_scopes`` lets through.
Its output is the call's result (written through ``_outputPath`` as usual), its
events are forwarded to the parent's stream as they happen, cancelling the
parent call cancels it, and nesting stops at a depth limit. Delegates are
looked up by name in the toolbox: a model can choose among registered names
(an enum in the blueprint), never load an arbitrary URL.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .call import Cancelled, ToolError
from .context import RunScope, ToolContext
from .events import Subagent
from .messages import UserMessage

if TYPE_CHECKING:
    from .run import Agent

ANONYMOUS = "anonymous"


def render_input(arguments: dict[str, Any], scope: dict[str, Any]) -> str:
    """The sub-agent's input message: the parameters as a structured prompt, then scoped context."""
    text = "Input (treat it as a structured prompt):\n" + json.dumps(
        arguments, ensure_ascii=False, indent=1
    )
    for key, value in scope.items():
        text += f"\n\n## Data: ¶{key}\n" + json.dumps(value, ensure_ascii=False, indent=1)
    return text


async def run_delegate(arguments: dict[str, Any], ctx: ToolContext[Any] | None) -> Any:
    assert ctx is not None  # a delegate's tool uses its context (uses_context is True)
    scope = ctx.run
    if scope is None:
        raise ToolError("a delegated call needs a parent run")
    name = ctx.meta.get("_delegate")
    if not isinstance(name, str):
        raise ToolError("_delegate must name a delegate")
    agent = _delegate_agent(scope, name)
    depth = scope.child_depth(name)
    state = ctx.scope.get("state")
    child = agent.start(
        UserMessage(render_input(arguments, ctx.scope)),
        state=state,
        depth=depth,
        name=agent.name or name,
        principal=scope.principal,
    )

    def cancel_child() -> None:
        child.cancel(ctx.cancel.reason or "the parent call was cancelled")

    ctx.cancel.add_callback(cancel_child)
    try:
        async for event in child.events():
            ctx.on_event(Subagent(ctx.call_id, ctx.tool_name, child.run_id, name, event))
    finally:
        ctx.cancel.remove_callback(cancel_child)
    result = child.result
    assert result is not None
    scope.usage.add(result.usage)  # the parent run pays for its delegates' model calls
    if result.status == "cancelled":
        raise Cancelled(ctx.cancel.reason)
    if result.status == "error":
        message = result.error.message if result.error else "unknown error"
        raise ToolError(f"Sub-agent '{name}' failed: {message}")
    if result.status == "paused":
        raise ToolError(f"Sub-agent '{name}' stopped: it needs an approval or a client tool.")
    return result.output


def _delegate_agent(scope: RunScope[Any], name: str) -> Agent[Any, Any]:
    agents = scope.toolbox.delegates
    agent: Agent[Any, Any] | None = agents.get(name)
    if agent is not None:
        return agent
    if name == ANONYMOUS:
        from .run import Agent

        return Agent(scope.model, max_delegate_depth=scope.max_depth)
    raise ToolError(f"unknown delegate {name!r}: known are {', '.join(agents) or 'none'}")
