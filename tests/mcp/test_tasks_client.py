"""An MCP server's tasks (the tasks extension) consumed as callwright calls, against
servers/tasking.py (a server on the SDK's extension seam) over streamable HTTP.

callwright declares the extension on its 2026-07-28 requests, so the server may answer
a call with a task: callwright polls it (``tasks/get``), its status messages are the
call's progress, its result is the call's result; a run cancelled, or a call timed out,
while it polls sends ``tasks/cancel``; a task that asks its user pauses the run on the
question, and the answer goes to the same task (``tasks/update``), from this agent or
from another one with a session of its own (as after a restart), never by calling the
tool again.
"""

from __future__ import annotations

from typing import Any

import anyio

from callwright import Agent
from callwright.elicitation import InputAnswer
from callwright.events import Event, ToolCallResult, ToolProgress
from callwright.mcp import MCPServer
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call


def scripted(tool: str, arguments: dict[str, Any]) -> ScriptedModel:
    """Calls ``tool``; once its result is in, says ``Done:`` and the result."""

    def turn(request: ModelRequest) -> list[Any]:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if results and not isinstance(request.messages[-1], UserMessage):
            last = results[-1]
            return [f"Done: {last.content}" + (" (error)" if last.is_error else "")]
        return [call(tool, arguments)]

    return ScriptedModel(turn)


def server(peer: Any, **options: Any) -> MCPServer:
    return MCPServer.http(peer.url, name="tasking", **options)


async def test_a_task_is_polled_to_its_result_with_progress(tasking: Any) -> None:
    async with Agent(scripted("count", {"n": 4}), toolsets=[server(tasking)]) as agent:
        run = agent.stream("count")
        events: list[Event] = [e async for e in run]
    progress = [e.text for e in events if isinstance(e, ToolProgress)]
    done = next(e for e in events if isinstance(e, ToolCallResult))
    assert progress, "no progress reached the run"
    assert set(progress) <= {f"step {i}/4" for i in range(1, 5)} and progress == sorted(progress)
    assert done.state == "output-available" and done.content == "counted to 4"
    assert run.result is not None and run.result.output == "Done: counted to 4"
    assert tasking.calls() == ["count"]


async def test_a_failed_task_is_an_error_result_the_model_reads(tasking: Any) -> None:
    async with Agent(scripted("broken", {}), toolsets=[server(tasking)]) as agent:
        result = await agent.run("break")
    assert result.status == "completed"
    assert (
        result.output == "Done: MCP server 'tasking': the task failed: the backend is down (error)"
    )


async def test_cancelling_the_run_cancels_the_task(tasking: Any) -> None:
    async with Agent(scripted("forever", {}), toolsets=[server(tasking)]) as agent:
        run = agent.stream("wait")
        async for event in run:
            if isinstance(event, ToolProgress):
                run.cancel("the user stopped it")
    assert run.result is not None and run.result.status == "cancelled"
    assert len(tasking.cancelled()) == 1


async def test_a_timed_out_call_cancels_the_task(tasking: Any) -> None:
    async with Agent(scripted("forever", {}), toolsets=[server(tasking, timeout=1)]) as agent:
        events = [e async for e in agent.stream("wait")]
    done = next(e for e in events if isinstance(e, ToolCallResult))
    assert done.error_kind == "timed-out"
    for _ in range(100):
        if tasking.cancelled():
            break
        await anyio.sleep(0.05)
    assert len(tasking.cancelled()) == 1


async def test_a_task_that_asks_pauses_the_run_and_the_answer_updates_the_same_task(
    tasking: Any,
) -> None:
    model = scripted("confirm", {"what": "deploy"})
    async with Agent(model, toolsets=[server(tasking)]) as agent:
        paused = await agent.run("go")
    assert paused.status == "paused"
    (pending,) = paused.pending
    assert pending.kind == "input" and pending.request is not None
    assert pending.request.message == "Really deploy?"
    assert pending.request.schema["required"] == ["reason"]
    assert pending.request.state["task"]
    answer = InputAnswer("accept", {"reason": "it is friday"}, request=pending.request)
    # another agent with a session of its own, as a process started after a restart
    async with Agent(model, toolsets=[server(tasking)]) as agent:
        resumed = await agent.run(messages=paused.messages, decisions={pending.call_id: answer})
    assert resumed.status == "completed"
    assert resumed.output == "Done: deploy: accept it is friday"
    assert tasking.calls() == ["confirm"]  # the task was answered, the tool not called again
