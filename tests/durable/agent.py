"""The agent the replicas in tests/durable serve (``--agent tests/durable/agent.py:make_agent``).

Its scripted model reads the last user message: ``slow <seconds> <tag>`` calls the
``slow`` tool, ``idem <seconds> <tag>`` the idempotent ``slow_idem``, ``remote`` and
``ridem`` the same on ``callwright worker`` processes, ``who <seconds> <tag>`` the
idempotent ``slow_who`` that also notes its run's principal and deps, ``delete <path>``
the ``delete_file`` tool that needs approval, ``three`` calls ``search`` (runs until its
call is cancelled) and ``lookup`` of ``a`` (at once) and ``b`` (once the run's search was
stopped) in parallel and then names all three results, ``talk <words>`` streams that many words
slowly, ``think <seconds> <tag>`` calls ``slow`` for 0.1 s and then takes that long to
answer (it notes ``think <tag>`` when its turn after the result begins); once a tool
result is in it says ``Done: <result>``. The tools append
``start <tag> pid=<pid>`` / ``end <tag> pid=<pid>`` lines to ``$SIDE_EFFECTS`` so that a
test counts how often each really ran, and in which process.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

from callwright import Agent, ToolContext, tool
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.models.base import ModelEvent, TextPart


def _note(line: str) -> None:
    path = os.environ.get("SIDE_EFFECTS")
    if path:
        with open(path, "a") as file:  # one short line: O_APPEND writes it whole
            file.write(f"{line} pid={os.getpid()}\n")


async def _work(seconds: float, tag: str, ctx: ToolContext) -> str:
    _note(f"start {tag}")
    steps = max(1, int(seconds / 0.1))
    for i in range(steps):
        ctx.progress(f"step {i + 1}/{steps}", (i + 1) / steps)
        await asyncio.sleep(seconds / steps)
    _note(f"end {tag}")
    return f"{tag} finished"


@tool
async def slow(seconds: float, tag: str, ctx: ToolContext) -> str:
    """Works for a while (not safe to repeat)."""
    return await _work(seconds, tag, ctx)


@tool(idempotent=True)
async def slow_idem(seconds: float, tag: str, ctx: ToolContext) -> str:
    """Works for a while (safe to repeat)."""
    return await _work(seconds, tag, ctx)


@tool(on_workers=True)
async def remote(seconds: float, tag: str, ctx: ToolContext) -> str:
    """Works for a while on a ``callwright worker`` (not safe to repeat)."""
    return await _work(seconds, tag, ctx)


@tool(on_workers=True, idempotent=True)
async def remote_idem(seconds: float, tag: str, ctx: ToolContext) -> str:
    """Works for a while on a ``callwright worker`` (safe to repeat)."""
    return await _work(seconds, tag, ctx)


@tool(idempotent=True)
async def slow_who(seconds: float, tag: str, ctx: ToolContext[Any]) -> str:
    """Notes whose run it serves and the deps it got, then works (safe to repeat)."""
    deps = ctx.deps or {}
    _note(f"who {tag} principal={ctx.principal} tenant={deps.get('tenant')} by={deps.get('by')}")
    return await _work(seconds, tag, ctx)


STOPPED_RUNS: set[str] = set()
"""Runs whose ``search`` call saw its cancel token (in this process)."""


@tool
async def search(query: str, ctx: ToolContext) -> str:
    """Search the web slowly: runs until its call is cancelled (at most 30 s)."""
    assert ctx.run is not None
    _note(f"start search {ctx.run.run_id}")
    try:
        await asyncio.wait_for(ctx.cancelled(), 30)
    except TimeoutError:
        return "never cancelled"
    STOPPED_RUNS.add(ctx.run.run_id)
    _note(f"cancelled search {ctx.run.run_id}")
    ctx.raise_if_cancelled()
    return "unreachable"


@tool
async def lookup(key: str, ctx: ToolContext) -> str:
    """Look a key up: ``a`` at once, ``b`` once the run's search was stopped."""
    assert ctx.run is not None
    for _ in range(1500):
        if key == "a" or ctx.run.run_id in STOPPED_RUNS:
            return f"value of {key}"
        await asyncio.sleep(0.02)
    return "search was never stopped"


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (a human approves first)."""
    _note(f"start delete {path}")
    return f"deleted {path}"


def script(request: ModelRequest) -> list[Any]:
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    user = messages[last_user]
    assert isinstance(user, UserMessage)
    results = [m for m in messages[last_user + 1 :] if isinstance(m, ToolResultMessage)]
    if results and user.content == "three":
        return ["Done: " + "; ".join(f"{m.tool_name}={m.content}" for m in results)]
    if results:
        return [f"Done: {results[-1].content}"]
    words = user.content.split()
    verb = words[0] if words else ""
    tools = {"slow": "slow", "idem": "slow_idem", "remote": "remote", "ridem": "remote_idem"}
    tools["who"] = "slow_who"
    if verb in tools and len(words) == 3:
        name = tools[verb]
        arguments = {"seconds": float(words[1]), "tag": words[2]}
        return [call(name, arguments, id=f"call_{words[2]}")]
    if verb == "think" and len(words) == 3:
        return [call("slow", {"seconds": 0.1, "tag": words[2]}, id=f"call_{words[2]}")]
    if user.content == "three":
        tag = uuid.uuid4().hex[:8]
        return [
            call("search", {"query": "slow"}, id=f"call_s_{tag}"),
            call("lookup", {"key": "a"}, id=f"call_a_{tag}"),
            call("lookup", {"key": "b"}, id=f"call_b_{tag}"),
        ]
    if verb == "delete" and len(words) == 2:
        return [call("delete_file", {"path": words[1]}, id=f"call_delete_{words[1]}")]
    if verb == "talk" and len(words) == 2:
        return [" ".join(f"w{i}" for i in range(int(words[1])))]
    return [f"You said: {user.content}"]


async def _think(request: ModelRequest) -> None:
    """``think <seconds> <tag>``: the turn after the tool's result starts (the result is
    journaled: the run acted on it) and takes a while before its first word."""
    messages = request.messages
    if not messages or not isinstance(messages[-1], ToolResultMessage):
        return
    user = next(m for m in reversed(messages) if isinstance(m, UserMessage))
    words = user.content.split()
    if len(words) == 3 and words[0] == "think":
        _note(f"think {words[2]}")
        await asyncio.sleep(float(words[1]))


class SlowText(ScriptedModel):
    """Streams each word 20 ms apart, like a model that takes its time."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        await _think(request)
        async for part in super().stream(request):
            if isinstance(part, TextPart):
                await asyncio.sleep(0.02)
            yield part


def make_agent() -> Agent:
    return Agent(
        SlowText(script, split_text=True, record=False),
        [slow, slow_idem, remote, remote_idem, slow_who, delete_file, search, lookup],
        name="durable-test",
        instructions="Works slowly, deletes with approval.",
    )
