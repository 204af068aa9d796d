"""The agent of the tool-worker tests (``--agent tests/durable/worker_agent.py:make_agent``).

The same file is the worker's agent (it runs the tools) and the web side's (its
``on_workers`` tools are replaced by proxies there). The scripted model calls the tool
the user message names (``<tool> <json arguments>``) and then says ``Done: <result>``.
Every tool appends ``start``/``end``/``cancelled`` lines with its tag to
``$SIDE_EFFECTS``, so a test counts how often each really ran and in which process.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from typing import Any

from callwright import Agent, ToolContext, tool
from callwright.call import ToolError
from callwright.elicitation import InputRequest, InputRequired
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call


def note(line: str) -> None:
    path = os.environ.get("SIDE_EFFECTS")
    if path:
        with open(path, "a") as file:  # one short line: O_APPEND writes it whole
            file.write(f"{line} pid={os.getpid()}\n")


async def _work(seconds: float, tag: str, ctx: ToolContext[Any]) -> str:
    note(f"start {tag}")
    steps = max(1, round(seconds / 0.1))
    for i in range(steps):
        if ctx.is_cancelled():
            note(f"cancelled {tag} {ctx.cancel.reason}")
            ctx.raise_if_cancelled()
        ctx.progress(f"step {i + 1}/{steps}", (i + 1) / steps)
        await asyncio.sleep(seconds / steps)
    note(f"end {tag}")
    return f"{tag} finished"


@tool(on_workers=True)
async def slow(seconds: float, tag: str, ctx: ToolContext[Any]) -> str:
    """Works for a while, reporting progress (not safe to repeat)."""
    return await _work(seconds, tag, ctx)


@tool(on_workers=True, idempotent=True)
async def slow_idem(seconds: float, tag: str, ctx: ToolContext[Any]) -> str:
    """Works for a while (safe to repeat)."""
    return await _work(seconds, tag, ctx)


@tool(on_workers=True, timeout=1.0)
async def hang(tag: str, ctx: ToolContext[Any]) -> str:
    """Never finishes on its own; has one second."""
    return await _work(60, tag, ctx)


class Overheated(ToolError):
    kind = "overheated"

    def model_text(self) -> str:
        return f"Too hot: {self.message}"


@tool(on_workers=True)
def fail(kind: str, tag: str) -> str:
    """Fails: a plain exception, a ToolError, or a ToolError of the tool's own kind."""
    note(f"start {tag}")
    if kind == "plain":
        raise RuntimeError(f"plain failure {tag}")
    if kind == "own":
        raise Overheated(tag)
    raise ToolError(f"tool failure {tag}")


@tool(on_workers=True)
async def count(n: int, tag: str) -> AsyncIterator[dict[str, int]]:
    """Streams partial outputs; the last one is the result."""
    note(f"start {tag}")
    for i in range(1, n + 1):
        await asyncio.sleep(0.05)
        yield {"count": i}


@tool(on_workers=True, requires_approval=True, allow_edits=True)
def transfer(amount: int, tag: str) -> str:
    """Moves money (a human approves, and may change the amount)."""
    note(f"start {tag} amount={amount}")
    return f"moved {amount}"


@tool(on_workers=True)
async def ask(tag: str, ctx: ToolContext[Any]) -> str:
    """Asks a human how many, then goes on with the answer."""
    note(f"start {tag}")
    if ctx.answer is None:
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
        raise InputRequired(InputRequest("How many?", schema))
    return f"{ctx.answer.action} {ctx.answer.content}"


@tool
def where(tag: str) -> str:
    """Runs in the web process: not marked for workers."""
    note(f"start {tag}")
    return f"pid {os.getpid()}"


def script(request: ModelRequest) -> list[Any]:
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return [f"Done: {last.content}"]
    assert isinstance(last, UserMessage)
    name, _, arguments = last.content.partition(" ")
    return [call(name, json.loads(arguments))]


def make_agent() -> Agent:
    return Agent(
        ScriptedModel(script),
        [slow, slow_idem, hang, fail, count, transfer, ask, where],
        cancel_grace=1.0,
    )
