"""The public API of the loop: typed agents, the ways to run them, history as JSON."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel

from callwright import (
    Agent,
    AssistantMessage,
    Limits,
    MessageHistory,
    RunAlreadyStarted,
    RunResult,
    SystemMessage,
    ToolCallPart,
    ToolContext,
    ToolResultMessage,
    UserMessage,
    events,
    tool,
)
from callwright.models import ScriptedModel, call


@dataclass
class Shop:
    name: str


@tool
def where(ctx: ToolContext[Shop]) -> str:
    """Which shop this is."""
    assert ctx.deps is not None
    return ctx.deps.name


def test_max_steps_is_kept_beside_limits() -> None:
    agent = Agent(ScriptedModel([]), max_steps=5, limits=Limits(max_tokens=10))
    assert agent.limits.max_steps == 5
    assert agent.limits.max_tokens == 10
    assert Agent(ScriptedModel([]), limits=Limits(max_steps=7)).limits.max_steps == 7
    assert Agent(ScriptedModel([])).limits.max_steps == 20


async def test_a_run_is_iterated_once() -> None:
    model = ScriptedModel([["hello"]])
    run = Agent(model).stream("hi")
    seen = [e async for e in run]
    assert isinstance(seen[-1], events.RunFinished)
    assert run.result is not None and run.result.output == "hello"
    with pytest.raises(RunAlreadyStarted):
        async for _ in run.events():
            pass
    assert len(model.requests) == 1  # the model was not called again
    assert sum(isinstance(m, AssistantMessage) for m in run.messages) == 1


async def test_stream_returns_the_run_with_its_result() -> None:
    agent: Agent[Shop, str] = Agent(
        ScriptedModel([[call("where", {})], ["at the shop"]]), [where], deps_type=Shop
    )
    run = agent.stream("where am I?", deps=Shop("corner"))
    kinds = [e.type async for e in run]
    assert kinds[0] == "run-started" and kinds[-1] == "run-finished"
    assert run.result is not None
    assert run.result.status == "completed"
    results = [m for m in run.result.messages if isinstance(m, ToolResultMessage)]
    assert [m.content for m in results] == ["corner"]


def test_run_sync_returns_a_typed_result() -> None:
    class Answer(BaseModel):
        city: str

    agent = Agent(ScriptedModel([[call("final_result", {"city": "Oslo"})]]), output_type=Answer)
    result: RunResult[Answer] = agent.run_sync("capital of Norway?")
    assert result.output == Answer(city="Oslo")


async def test_run_sync_inside_a_running_loop_is_refused() -> None:
    agent = Agent(ScriptedModel([["x"]]))
    with pytest.raises(RuntimeError, match="running event loop"):
        agent.run_sync("hi")


def test_message_history_round_trips_through_json() -> None:
    history = [
        SystemMessage("be brief"),
        UserMessage("list files", id="u1"),
        AssistantMessage(
            "Looking.",
            [ToolCallPart("c1", "list_files", {"path": ".", "_outputPath": "†state.files"})],
            "the user wants files",
            "m1",
        ),
        ToolResultMessage("c1", "list_files", "a.txt\nb.txt"),
        ToolResultMessage("c2", "delete", "Tool call denied: no", is_error=True),
    ]
    data = MessageHistory.dump_json(history)
    assert MessageHistory.validate_json(data) == history


def test_a_paused_run_resumes_from_history_loaded_from_json() -> None:
    @tool(requires_approval=True)
    def wipe(path: str) -> str:
        """Delete a file."""
        return f"wiped {path}"

    model = ScriptedModel([[call("wipe", {"path": "a.txt"})], ["done"]])
    agent = Agent(model, [wipe])
    paused = agent.run_sync("wipe a.txt")
    assert paused.status == "paused"
    (pending,) = paused.pending
    saved = MessageHistory.dump_json(paused.messages)

    from callwright import Decision

    resumed = agent.run_sync(
        messages=MessageHistory.validate_json(saved),
        decisions={pending.call_id: Decision(approved=True)},
    )
    assert resumed.status == "completed"
    assert resumed.output == "done"
    assert any(
        isinstance(m, ToolResultMessage) and m.content == "wiped a.txt" for m in resumed.messages
    )


def test_run_sync_works_without_a_loop() -> None:
    assert Agent(ScriptedModel([["plain"]])).run_sync("hi").output == "plain"
