"""A run starts from one value: a journaled segment's start is the journal's (history,
ids, principal, remembered approvals, settings) over what only the request holds (its
front-end tools and forwarded props), whether a request begins it or another process
continues it; ``Agent.start`` and ``Agent.start_from`` make the same run."""

from __future__ import annotations

from typing import Any

from callwright import (
    Agent,
    AssistantMessage,
    Message,
    RunStart,
    Tool,
    ToolContext,
    UserMessage,
    start_journaled,
    tool,
)
from callwright.durable._segment import SegmentSpec, continued_run
from callwright.models import ScriptedModel, call
from callwright.models._settings import ModelSettings
from callwright.store import Answer, SQLJournal, recorder_for, run_start

SEEN: list[dict[str, Any]] = []


@tool(requires_approval=True)
def delete(name: str, ctx: ToolContext) -> str:
    """Delete a file."""
    SEEN.append({"principal": ctx.principal, "props": ctx.forwarded_props})
    return f"deleted {name}"


def front_end_tool() -> Tool:
    schema = {"type": "object", "properties": {"color": {"type": "string"}}}
    return Tool.from_schema(
        {"name": "pick_color", "description": "Ask the user for a color.", "parameters": schema}
    )


async def test_a_segments_start_is_the_journals_over_what_only_the_request_holds(
    journal: SQLJournal,
) -> None:
    journal.begin("t", "r1", [UserMessage("hello")], [], {}, {"n": 1}, principal="ann")
    started = journal.begin(
        "t",
        "r2",
        [UserMessage("forged"), UserMessage("again")],
        [],
        {},
        {"n": 99},
        principal="ann",
        settings=ModelSettings(temperature=0.25),
    )
    request = RunStart(
        messages=[UserMessage("the client's copy")],
        prompt=[UserMessage("more")],
        client_tools=(front_end_tool(),),
        allow_client_override=True,
        state={"n": 99},
        run_id="client-run",
        thread_id="client-thread",
        forwarded_props={"tenant": "acme"},
        principal="mallory",
        traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    )
    start = run_start(started, request)
    assert list(start.messages) == started.history and start.prompt == ()
    assert (start.run_id, start.thread_id, start.principal) == ("r2", "t", "ann")
    assert start.state == started.state and start.settings == ModelSettings(temperature=0.25)
    assert start.client_tools == request.client_tools and start.allow_client_override
    assert start.forwarded_props == {"tenant": "acme"}
    assert start.traceparent == request.traceparent
    assert request.run_id == "client-run"  # the request's start is not changed


async def test_a_continued_segment_starts_as_the_segment_it_continues(
    journal: SQLJournal,
) -> None:
    """The server's start and the durable layer's are one builder: a reopened segment
    runs with the principal, front-end tools and forwarded props of the request that
    began it, and the approval its human gave."""
    SEEN.clear()
    agent = Agent(ScriptedModel([[call("delete", {"name": "a"}, id="c1")], ["Done."]]), [delete])
    spec = SegmentSpec(
        "r2",
        "t",
        principal="ann",
        client_tools=[{"name": "pick_color", "description": "Ask.", "parameters": {}}],
        forwarded_props={"tenant": "acme"},
    )
    run, recorder = start_journaled(
        journal, agent, "t", "r1", [UserMessage("delete a")], [], principal="ann"
    )
    async for event in run.events():
        recorder.record(event, b"")
    assert run.result is not None and run.result.status == "paused"
    (pending,) = journal.pending("t", "ann")
    approval = Answer("approval", "c1", pending.approval_id, True)
    started = journal.begin("t", "r2", [], [approval], {}, principal="ann")
    again = continued_run(agent, started, spec)
    assert again.toolbox.get("pick_color") is not None
    rec = recorder_for(journal, started, again)
    async for event in again.events():
        rec.record(event, b"")
    assert again.result is not None and again.result.output == "Done."
    assert SEEN == [{"principal": "ann", "props": {"tenant": "acme"}}]
    assert (again.run_id, again.thread_id) == ("r2", "t")


async def test_start_and_start_from_make_the_same_run() -> None:
    def agent() -> Agent:
        return Agent(ScriptedModel([["Hi there."]]))

    history = [UserMessage("earlier")]
    by_keywords = agent().start(
        "hello", messages=history, run_id="r", thread_id="t", forwarded_props={"k": 1}
    )
    by_value = agent().start_from(
        RunStart(
            messages=history,
            prompt=[UserMessage("hello")],
            run_id="r",
            thread_id="t",
            forwarded_props={"k": 1},
        )
    )
    results = []
    for run in (by_keywords, by_value):
        async for _ in run.events():
            pass
        assert run.result is not None
        results.append(run.result)
        assert dict(run.scope.forwarded_props) == {"k": 1}
    first, second = results
    assert _texts(first.messages) == _texts(second.messages)
    assert _texts(first.new_messages) == _texts(second.new_messages) == ["hello", "Hi there."]
    assert (first.run_id, first.thread_id) == (second.run_id, second.thread_id) == ("r", "t")


def _texts(messages: list[Message]) -> list[str]:
    """The messages' words (an assistant message's id is new in each run)."""
    return [m.text if isinstance(m, AssistantMessage) else str(m.content) for m in messages]
