"""MCP servers' tools inside a run (``callwright.mcp.MCPServer``), against real servers.

Every call is an ordinary call: listed tools join the toolbox (prefix, approval by
hints), progress becomes ``ToolProgress``, structured content the output and its text
the model's, ``isError`` an error result, cancellation and timeouts reach the server,
a server that dies gives error results and is reconnected, and a server's question
(elicitation) pauses the run until an ``InputAnswer`` resumes the call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest

from callwright import Agent, Tool
from callwright.elicitation import InputAnswer
from callwright.events import (
    Event,
    InputRequested,
    RunError,
    RunFinished,
    ToolCallResult,
    ToolProgress,
)
from callwright.mcp import MCPServer
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call


def scripted(*first: Any) -> ScriptedModel:
    """Makes the given calls after each user message; once results are in, answers
    ``Done: name=content; ...`` so a test reads exactly what the model saw."""

    def turn(request: ModelRequest) -> list[Any]:
        messages = request.messages
        last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
        results = [m for m in messages[last_user + 1 :] if isinstance(m, ToolResultMessage)]
        if not results:
            return list(first)
        seen = "; ".join(
            f"{r.tool_name}={r.content}" + (" (error)" if r.is_error else "") for r in results
        )
        return [f"Done: {seen}"]

    return ScriptedModel(turn)


async def drain(run: Any) -> list[Event]:
    return [event async for event in run]


def results(events: Sequence[Event]) -> dict[str, ToolCallResult]:
    return {e.tool_name: e for e in events if isinstance(e, ToolCallResult)}


# --- listing ---------------------------------------------------------------------------------


async def test_tools_join_the_toolbox_with_a_prefix(everything: MCPServer) -> None:
    everything.prefix = "ev"
    model = scripted(call("ev_echo", {"message": "hi"}))
    async with Agent(model, toolsets=[everything]) as agent:
        result = await agent.run("echo")
        names = agent.toolbox.names
    assert {"ev_echo", "ev_get-sum", "ev_trigger-long-running-operation"} <= set(names)
    offered = {t["name"] for t in model.requests[0].tools}
    assert "ev_echo" in offered
    assert result.output == "Done: ev_echo=Echo: hi"
    echo = agent.toolbox.get("ev_echo")
    assert echo is not None and echo.title and not echo.needs_approval({"message": "x"})


async def test_unreachable_server_ends_the_run_with_a_clear_error() -> None:
    server = MCPServer.stdio("/nonexistent/mcp-server", name="ghost")
    async with Agent(scripted("hello"), toolsets=[server]) as agent:
        events = await drain(agent.stream("hi"))
    error = events[-1]
    assert isinstance(error, RunError)
    assert error.code == "toolset_unavailable"
    assert "MCP server 'ghost' could not be reached" in error.message


async def test_a_client_tool_may_not_replace_an_mcp_tool(everything_stdio: Any) -> None:
    shadow = Tool.from_schema({"name": "echo", "parameters": {"type": "object"}}, client=True)
    async with Agent(scripted("hi"), toolsets=[everything_stdio()]) as agent:
        events = await drain(agent.start("hi", client_tools=[shadow]))
    assert isinstance(events[-1], RunError) and events[-1].code == "tool_conflict"


# --- results -----------------------------------------------------------------------------------


async def test_structured_content_is_the_output_and_its_text_what_the_model_reads(
    everything: MCPServer,
) -> None:
    model = scripted(call("get-structured-content", {"location": "Chicago"}))
    async with Agent(model, toolsets=[everything]) as agent:
        run = agent.stream("weather")
        events = await drain(run)
    result = results(events)["get-structured-content"]
    assert result.state == "output-available"
    weather = {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
    assert result.output == weather
    assert result.content == '{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}'
    assert run.result is not None and run.result.output.startswith("Done: get-structured-content={")


async def test_python_reference_server(time_server: MCPServer) -> None:
    model = scripted(
        call("get_current_time", {"timezone": "UTC"}),
        call("get_current_time", {"timezone": "Mars/Olympus_Mons"}),
    )
    async with Agent(model, toolsets=[time_server]) as agent:
        run = agent.stream("time")
        events = await drain(run)
    found = [e for e in events if isinstance(e, ToolCallResult)]
    ok, bad = sorted(found, key=lambda e: e.state)
    assert ok.state == "output-available" and ok.output["timezone"] == "UTC"
    assert bad.state == "output-error" and "Invalid timezone" in bad.content
    assert run.result is not None and run.result.status == "completed"
    assert "(error)" in run.result.output  # the model saw an error result and the run went on


async def test_progress_reaches_the_run_before_the_result(everything: MCPServer) -> None:
    model = scripted(call("trigger-long-running-operation", {"duration": 0.6, "steps": 3}))
    async with Agent(model, toolsets=[everything]) as agent:
        events = await drain(agent.stream("long"))
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert [p.fraction for p in progress] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert [p.text for p in progress] == ["1/3", "2/3", "3/3"]
    done = next(e for e in events if isinstance(e, ToolCallResult))
    assert events.index(progress[-1]) < events.index(done)
    assert done.content.startswith("Long running operation completed")


# --- cancellation, timeouts, a dying server --------------------------------------------------


async def test_cancelling_the_run_cancels_the_mcp_call(everything_stdio: Any) -> None:
    model = scripted(call("trigger-long-running-operation", {"duration": 30, "steps": 30}))
    async with Agent(model, toolsets=[everything_stdio()], cancel_grace=10) as agent:
        run = agent.stream("long")
        events: list[Event] = []
        started = None
        async for event in run:
            events.append(event)
            if isinstance(event, ToolProgress) and started is None:
                started = time.monotonic()
                run.cancel("the user stopped it")
    assert started is not None and time.monotonic() - started < 3  # not the grace period
    result = results(events)["trigger-long-running-operation"]
    assert result.error_kind == "cancelled" and "the user stopped it" in result.content
    assert run.result is not None and run.result.status == "cancelled"


async def test_a_timeout_applies(everything_stdio: Any) -> None:
    model = scripted(call("trigger-long-running-operation", {"duration": 20, "steps": 2}))
    async with Agent(model, toolsets=[everything_stdio(timeout=0.5)]) as agent:
        started = time.monotonic()
        events = await drain(agent.stream("long"))
    assert time.monotonic() - started < 10
    result = results(events)["trigger-long-running-operation"]
    assert result.error_kind == "timed-out" and result.content == "Timed out after 0.5 seconds."


async def test_a_dying_server_gives_an_error_result_and_is_reconnected(
    changing_stdio: Any,
) -> None:
    model = ScriptedModel(
        [[call("die", {})], ["ok"], [call("whoami", {})], ["ok"]],
    )
    async with Agent(model, toolsets=[changing_stdio()]) as agent:
        first = await asyncio.wait_for(agent.run("die"), 60)
        second = await asyncio.wait_for(agent.run("again", messages=first.messages), 60)
    died = next(m for m in first.new_messages if isinstance(m, ToolResultMessage))
    assert died.is_error and "closed the connection during the call" in died.content
    assert first.status == "completed"
    alive = next(m for m in second.new_messages if isinstance(m, ToolResultMessage))
    assert not alive.is_error and alive.content == "nobody"


# --- list changes, approvals, headers -----------------------------------------------------


async def test_a_changed_list_is_listed_again_before_the_next_run(changing_stdio: Any) -> None:
    model = ScriptedModel([[call("add_tool", {"name": "fresh"})], ["ok"], [call("fresh")], ["ok"]])
    async with Agent(model, toolsets=[changing_stdio()]) as agent:
        first = await agent.run("add")
        assert "fresh" not in agent.toolbox  # listed once, when the run started
        for _ in range(100):  # the change notification arrives on its own stream
            if agent.toolbox.toolsets[0].needs_listing:
                break
            await asyncio.sleep(0.05)
        second = await agent.run("call it", messages=first.messages)
    assert "fresh" in agent.toolbox
    fresh = next(m for m in second.new_messages if isinstance(m, ToolResultMessage))
    assert fresh.content == "fresh is here" and not fresh.is_error


@pytest.mark.parametrize(
    ("rule", "asks"),
    [(None, {"wipe": True, "whoami": False}), (False, {"wipe": False, "whoami": False})],
)
async def test_approval_follows_the_hints_unless_overridden(
    changing_http: Any, rule: Any, asks: dict[str, bool]
) -> None:
    model = scripted(call("wipe", {"target": "db"}))
    server = MCPServer.http(changing_http.url, name="changing", requires_approval=rule)
    async with Agent(model, toolsets=[server]) as agent:
        result = await agent.run("wipe")
        needs = {n: agent.toolbox.get(n).needs_approval({}) for n in asks}  # type: ignore[union-attr]
    assert needs == asks
    if asks["wipe"]:
        assert result.status == "paused" and result.pending[0].kind == "approval"
    else:
        assert result.output == "Done: wipe=wiped db"


async def test_http_headers_reach_the_server(changing_http: Any) -> None:
    server = MCPServer.http(changing_http.url, {"Authorization": "Bearer abc"}, name="changing")
    async with Agent(scripted(call("whoami")), toolsets=[server]) as agent:
        result = await agent.run("who")
    assert result.output == "Done: whoami=Bearer abc"


# --- elicitation: the server's question pauses the run ----------------------------------------


async def ask(agent: Agent) -> tuple[Any, list[Event]]:
    run = agent.stream("ask me")
    events = await drain(run)
    return run.result, events


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (InputAnswer("accept", {"name": "Ada", "check": True}), "- Name: Ada"),
        (InputAnswer("decline"), "declined"),
        (InputAnswer("cancel"), "cancelled"),
    ],
)
async def test_elicitation_pauses_the_run_and_the_answer_resumes_the_call(
    everything: MCPServer, answer: InputAnswer, expected: str
) -> None:
    model = scripted(call("trigger-elicitation-request", {}))
    async with Agent(model, toolsets=[everything]) as agent:
        paused, events = await ask(agent)
        assert paused.status == "paused"
        (pending,) = paused.pending
        assert pending.kind == "input" and pending.request is not None
        asked = next(e for e in events if isinstance(e, InputRequested))
        assert asked.request is pending.request
        assert pending.request.message == "Please provide inputs for the following fields:"
        assert pending.request.schema["required"] == ["name"]
        assert isinstance(events[-1], RunFinished) and events[-1].status == "paused"
        answer.request = pending.request
        resumed = agent.stream(messages=paused.messages, decisions={pending.call_id: answer})
        after = await drain(resumed)
    result = results(after)["trigger-elicitation-request"]
    assert result.state == "output-available"
    assert expected in result.content.lower() if expected.islower() else expected in result.content
    assert resumed.result is not None and resumed.result.status == "completed"


async def test_an_unanswered_question_expires(everything_stdio: Any) -> None:
    model = scripted(call("trigger-elicitation-request", {}))
    async with Agent(model, toolsets=[everything_stdio(input_timeout=0.2)]) as agent:
        paused, _ = await ask(agent)
        (pending,) = paused.pending
        await asyncio.sleep(0.6)
        answer = InputAnswer("accept", {"name": "Late"}, request=pending.request)
        resumed = await agent.run(messages=paused.messages, decisions={pending.call_id: answer})
    late = next(m for m in resumed.new_messages if isinstance(m, ToolResultMessage))
    assert late.is_error and "is no longer open" in late.content


async def test_closing_the_agent_ends_the_session(everything_stdio: Any) -> None:
    server = everything_stdio()
    agent = Agent(scripted(call("echo", {"message": "x"})), toolsets=[server])
    await agent.run("echo")
    assert server._connection.client is not None
    await agent.aclose()
    assert server._connection.client is None
