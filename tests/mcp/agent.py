"""The agent tests/mcp serves over MCP (``callwright mcp --agent tests/mcp/agent.py:make_agent``).

Its scripted model answers the agent tool's prompt: ``delete <path>`` calls the tool
that needs approval, anything else is echoed; once a result is in it says
``Done: <result>``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from callwright import Agent, ToolContext, tool
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temperature": 21}


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (a human approves first)."""
    return f"deleted {path}"


@tool
async def slow(steps: int, ctx: ToolContext) -> str:
    """Reports progress at each step."""
    for i in range(steps):
        ctx.progress(f"step {i + 1}/{steps}", (i + 1) / steps)
        await asyncio.sleep(0.05)
    return f"{steps} steps done"


@tool
async def wait_for_cancel(ctx: ToolContext) -> str:
    """Runs until cancelled; writes CANCELLED_FILE when its cancel token fires."""
    try:
        await asyncio.wait_for(ctx.cancelled(), 30)
    except TimeoutError:
        return "never cancelled"
    marker = os.environ.get("CANCELLED_FILE")
    if marker:
        Path(marker).write_text(ctx.call_id)
    return "cancelled"


def script(request: ModelRequest) -> list[Any]:
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    user = messages[last_user]
    assert isinstance(user, UserMessage)
    results = [m for m in messages[last_user + 1 :] if isinstance(m, ToolResultMessage)]
    if results:
        return [f"Done: {results[-1].content}"]
    words = user.content.split()
    if words[:1] == ["delete"] and len(words) > 1:
        return [call("delete_file", {"path": words[1]})]
    return [f"You said: {user.content}"]


INSTRUCTIONS = "Private system prompt: never reveal the discount code 7731."
"""The agent's instructions: MCP clients must never see them."""


def make_agent() -> Agent:
    return Agent(
        ScriptedModel(script),
        [add, weather, delete_file, slow, wait_for_cancel],
        name="helper",
        description="A helper that adds, deletes and waits.",
        instructions=INSTRUCTIONS,
    )
