"""Stopping one call of a running run (``Run.cancel_call``): the other calls go on and the
model gets every call's result, the stopped one as ``Cancelled: <reason>``."""

from __future__ import annotations

import asyncio
from typing import Any

from callwright import Agent, ToolContext, ToolResultMessage, tool
from callwright import events as ev
from callwright.models import ScriptedModel, call


def results_of(events: list[Any]) -> dict[str, ev.ToolCallResult]:
    return {e.call_id: e for e in events if isinstance(e, ev.ToolCallResult)}


async def test_one_of_three_parallel_calls_is_cancelled_and_the_others_finish() -> None:
    release = asyncio.Event()
    saw_token = asyncio.Event()

    @tool
    async def search(query: str, ctx: ToolContext) -> str:
        """Search slowly; stops when its call is cancelled."""
        await ctx.cancelled()
        saw_token.set()
        ctx.raise_if_cancelled()
        return "never"

    @tool
    async def lookup(key: str) -> str:
        """Look a key up once the test lets it."""
        await release.wait()
        return f"value of {key}"

    model = ScriptedModel(
        [
            [
                call("search", {"query": "slow"}, id="c1"),
                call("lookup", {"key": "a"}, id="c2"),
                call("lookup", {"key": "b"}, id="c3"),
            ],
            ["all three are back"],
        ]
    )
    run = Agent(model, [search, lookup]).start("go")
    events: list[Any] = []
    started = 0
    async for e in run.events():
        events.append(e)
        if isinstance(e, ev.ToolExecutionStart):
            started += 1
            if started == 3:
                assert sorted(run.running_calls()) == ["c1", "c2", "c3"]
                assert run.cancel_call("c1") is True
                assert run.cancel_call("c1") is False  # once
        if isinstance(e, ev.ToolCallResult) and e.call_id == "c1":
            release.set()
    assert saw_token.is_set()
    results = results_of(events)
    assert results["c1"].state == "output-error"
    assert results["c1"].error_kind == "cancelled"
    assert results["c1"].content == "Cancelled: cancelled by the user"
    assert results["c2"].content == "value of a" and results["c3"].content == "value of b"
    assert run.result is not None and run.result.status == "completed"
    assert run.result.output == "all three are back"
    sent = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert [(m.call_id, m.is_error) for m in sent] == [("c1", True), ("c2", False), ("c3", False)]
    assert "cancelled by the user" in sent[0].content
    assert run.running_calls() == []


async def test_a_tool_ignoring_its_token_is_stopped_after_the_grace() -> None:
    @tool
    async def stubborn(ctx: ToolContext) -> str:
        """Ignores its token."""
        await asyncio.sleep(30)
        return "late"

    @tool
    async def plain() -> str:
        """Takes no context: it cannot see a token, so its task is cancelled at once."""
        await asyncio.sleep(30)
        return "late"

    model = ScriptedModel([[call("stubborn", id="s"), call("plain", id="p")], ["done"]])
    run = Agent(model, [stubborn, plain], cancel_grace=0.05).start("go")
    events: list[Any] = []
    async for e in run.events():
        events.append(e)
        if isinstance(e, ev.ToolExecutionStart):
            assert run.cancel_call(e.call_id, "too slow") is True
    results = results_of(events)
    assert {r.content for r in results.values()} == {"Cancelled: too slow"}
    assert run.result is not None and run.result.status == "completed"


async def test_a_finished_or_unknown_call_is_not_cancelled() -> None:
    @tool
    async def quick() -> str:
        """Returns at once."""
        return "ok"

    model = ScriptedModel([[call("quick", id="q")], ["done"]])
    run = Agent(model, [quick]).start("go")
    events: list[Any] = []
    async for e in run.events():
        events.append(e)
        if isinstance(e, ev.ToolCallResult):
            assert run.cancel_call("q") is False
            assert run.cancel_call("nope") is False
    assert results_of(events)["q"].content == "ok"
    assert run.result is not None and run.result.status == "completed"
