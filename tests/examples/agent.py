"""The scripted agent the starter front ends are driven against.

A scripted model picks its first turn from a keyword of the latest user message and,
once tool results are in, answers ``Done: tool=result; ...``, so a test reads on the
page exactly what the model saw. Tool arguments stream in paced chunks (as a real
model writes them), so a page shows a call while its arguments are still arriving.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

from callwright import Agent, ToolContext, tool
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelEvent, ModelRequest, ScriptedModel, ToolCallDeltaPart, call

ARGUMENT_PAUSE = 0.25
"""Seconds between two chunks of a call's arguments: long enough for a page to show them
arriving, short enough to keep the tests quick."""


@tool
async def deploy(env: str, ctx: ToolContext) -> dict[str, Any]:
    """Deploys in three stages, with progress and a partial output per stage."""
    for stage in range(1, 4):
        ctx.progress(f"stage {stage} of 3", stage / 3)
        ctx.update({"env": env, "stage": stage})
        await asyncio.sleep(0.3)
    return {"env": env, "status": "deployed"}


RELEASE = threading.Event()
"""Set by a test to let ``hold`` finish: a reply that streams for exactly as long as the
test needs, without a timing guess."""


@tool
async def hold(ctx: ToolContext) -> str:
    """Runs until the test sets ``RELEASE``."""
    ctx.progress("holding")
    while not RELEASE.is_set():
        await asyncio.sleep(0.05)
    return "released"


@tool
def check_disk() -> str:
    """Fails, as a tool does when the world is not as it expects."""
    raise RuntimeError("the disk is full")


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Deletes a file; a human approves each call."""
    return f"deleted {path}"


def _files_seen(user: UserMessage) -> str:
    return ", ".join(f"{f.filename or 'unnamed'} ({f.media_type})" for f in user.files)


def script(request: ModelRequest) -> list[Any]:
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    user = messages[last_user]
    assert isinstance(user, UserMessage)
    results = [m for m in messages[last_user + 1 :] if isinstance(m, ToolResultMessage)]
    if results:
        seen = "; ".join(
            f"{r.tool_name}={r.content}" + (" (error)" if r.is_error else "") for r in results
        )
        return [f"Done: {seen}"]
    if user.files:
        return [f"I received {len(user.files)} file(s): {_files_seen(user)}."]
    words = user.content.lower().split()
    if "deploy" in words:
        args = ['{"env"', ': "sta', "ging", '"}']
        return [call("deploy", {"env": "staging"}, id="call_deploy", chunks=args)]
    if "disk" in words:
        return [call("check_disk", {}, id="call_disk")]
    if "hold" in words:
        return [call("hold", {}, id="call_hold")]
    if "clean" in words:
        return [
            call("delete_file", {"path": "a.txt"}, id="call_delete_a"),
            call("delete_file", {"path": "b.txt"}, id="call_delete_b"),
        ]
    if "where" in words:  # a front-end tool: the AG-UI starter declares it and runs it
        return [call("user_locale", {}, id="call_locale")]
    return [f"I have no script for {user.content!r}."]


class PacedModel:
    """The scripted model, pausing after each chunk of tool-call arguments."""

    def __init__(self, model: ScriptedModel, pause: float = ARGUMENT_PAUSE) -> None:
        self.model = model
        self.pause = pause
        self.name = model.name
        self.modes = model.modes

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        async for event in self.model.stream(request):
            yield event
            if isinstance(event, ToolCallDeltaPart):
                await asyncio.sleep(self.pause)


def make_agent() -> tuple[Agent, ScriptedModel]:
    """The agent, and its scripted model (whose ``requests`` a test reads)."""
    model = ScriptedModel(script, split_text=True)
    return Agent(PacedModel(model), [deploy, hold, check_disk, delete_file]), model
