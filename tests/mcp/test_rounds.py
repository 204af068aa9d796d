"""Questions of a 2026-07-28 MCP server (multi-round-trip elicitation), against
servers/asking.py, a server on the SDK's own API started over stdio and streamable HTTP.

The call returns its questions and a sealed ``requestState``; the run pauses on each
question as on any server's question (a pending call of kind ``input``) whose state says
how to call again, and the answer calls the tool again with the answers and the state:
in the same process, or in another one (a restart) as long as the server still accepts
the state. Declining and cancelling reach the server as such.
"""

from __future__ import annotations

from typing import Any

import pytest

from callwright import Agent
from callwright.elicitation import InputAnswer
from callwright.events import InputRequested, RunFinished
from callwright.mcp import MCPServer
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call


def scripted(tool: str, arguments: dict[str, Any]) -> ScriptedModel:
    """Calls ``tool`` after the user's message; once its result is in, says ``Done:`` and
    the result, so a test reads exactly what the model saw."""

    def turn(request: ModelRequest) -> list[Any]:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if results and not isinstance(request.messages[-1], UserMessage):
            last = results[-1]
            return [f"Done: {last.content}" + (" (error)" if last.is_error else "")]
        return [call(tool, arguments)]

    return ScriptedModel(turn)


async def answer_all(agent: Agent, replies: list[InputAnswer]) -> tuple[Any, list[str]]:
    """Run, then answer each question the run pauses on with the next reply; the final
    result and the questions asked."""
    result = await agent.run("ask me")
    asked = []
    for reply in replies:
        assert result.status == "paused", result
        (pending,) = result.pending
        assert pending.kind == "input" and pending.request is not None
        asked.append(pending.request.message)
        reply.request = pending.request
        result = await agent.run(messages=result.messages, decisions={pending.call_id: reply})
    return result, asked


def final_text(result: Any) -> str:
    return str(result.output)


async def test_the_answer_calls_the_tool_again_and_its_result_reaches_the_model(
    asking: MCPServer,
) -> None:
    async with Agent(scripted("greet", {"greeting": "Hi"}), toolsets=[asking]) as agent:
        run = agent.stream("ask me")
        events = [e async for e in run]
        paused = run.result
        assert paused is not None and paused.status == "paused"
        (pending,) = paused.pending
        asked = next(e for e in events if isinstance(e, InputRequested))
        assert asked.request is pending.request and pending.request is not None
        assert pending.request.message == "What is your name?"
        assert pending.request.schema["required"] == ["name"]
        state = pending.request.state
        assert (state["server"], state["tool"], state["arguments"]) == (
            "asking",
            "greet",
            {"greeting": "Hi"},
        )
        assert state["requestState"] and list(state["asking"]) == [state["key"]]
        assert isinstance(events[-1], RunFinished) and events[-1].status == "paused"
        answer = InputAnswer("accept", {"name": "Ada"}, request=pending.request)
        resumed = await agent.run(messages=paused.messages, decisions={pending.call_id: answer})
    assert resumed.status == "completed"
    assert final_text(resumed) == "Done: Hi, Ada!"


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_declining_and_cancelling_reach_the_server(asking: MCPServer, action: Any) -> None:
    async with Agent(scripted("greet", {"greeting": "Hi"}), toolsets=[asking]) as agent:
        result, _ = await answer_all(agent, [InputAnswer(action)])
    assert final_text(result) == f"Done: the server saw: {action}"


async def test_a_server_that_asks_again_pauses_the_run_again(asking: MCPServer) -> None:
    async with Agent(scripted("favourite", {}), toolsets=[asking]) as agent:
        replies = [
            InputAnswer("accept", {"name": "Ada"}),
            InputAnswer("accept", {"colour": "teal"}),
        ]
        result, asked = await answer_all(agent, replies)
    assert asked == ["What is your name?", "Ada, what is your favourite colour?"]
    assert final_text(result) == "Done: favourite: teal"


async def test_the_questions_of_one_round_are_asked_one_after_the_other(
    asking_stdio: Any,
) -> None:
    async with Agent(scripted("both", {}), toolsets=[asking_stdio()]) as agent:
        replies = [InputAnswer("accept", {"name": "Ada"}), InputAnswer("decline")]
        result, asked = await answer_all(agent, replies)
    assert asked == ["What is your name?", "Which city?"]
    assert final_text(result) == "Done: name=accept Ada city=decline"


async def paused_then_closed(server: MCPServer) -> tuple[Any, Any]:
    """A run paused on the question, its agent closed (the stdio server exits): the
    messages and the pending call a journal would keep."""
    async with Agent(scripted("greet", {"greeting": "Hi"}), toolsets=[server]) as agent:
        paused = await agent.run("ask me")
    (pending,) = paused.pending
    return paused.messages, pending


@pytest.fixture(params=["stdio", "http"])
def fresh_asking(request: pytest.FixtureRequest, asking_stdio: Any) -> Any:
    """A new ``MCPServer`` for servers/asking.py on each call: over stdio a new process
    (sealing under the shared key), over HTTP a new session with the server that asked."""
    if request.param == "stdio":
        return asking_stdio
    peer = request.getfixturevalue("asking_http")
    return lambda: MCPServer.http(peer.url, name="asking")


async def test_the_answer_resumes_the_call_in_another_process(fresh_asking: Any) -> None:
    """What a restart from a journal does: another agent (another session, another stdio
    server process) gets the question's answer and the state kept with it."""
    messages, pending = await paused_then_closed(fresh_asking())
    answer = InputAnswer("accept", {"name": "Bo"}, request=pending.request)
    agent = Agent(scripted("greet", {"greeting": "Hi"}), toolsets=[fresh_asking()])
    async with agent:
        resumed = await agent.run(messages=messages, decisions={pending.call_id: answer})
    assert final_text(resumed) == "Done: Hi, Bo!"


async def test_a_server_that_forgot_its_key_gives_a_clear_error(asking_stdio: Any) -> None:
    messages, pending = await paused_then_closed(asking_stdio(key=None))
    answer = InputAnswer("accept", {"name": "Bo"}, request=pending.request)
    agent = Agent(scripted("greet", {"greeting": "Hi"}), toolsets=[asking_stdio(key=None)])
    async with agent:
        resumed = await agent.run(messages=messages, decisions={pending.call_id: answer})
    [result] = [m for m in resumed.new_messages if isinstance(m, ToolResultMessage)]
    assert result.is_error and "no longer accepts the state of its question" in result.content
    assert "call the tool again" in result.content


async def test_a_sampling_request_in_the_round_is_answered_by_the_runs_model(
    asking_stdio: Any,
) -> None:
    """The round asks the human and samples at once: the run's model answers the sample
    before the run pauses, and both answers go back with the call made again."""

    def turn(request: ModelRequest) -> list[Any]:
        first = request.messages[0]
        if isinstance(first, UserMessage) and first.content.startswith("Write one line"):
            return ["A fine line."]
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if results and not isinstance(request.messages[-1], UserMessage):
            return [f"Done: {results[-1].content}"]
        return [call("dedicate", {})]

    server = asking_stdio(sampling=True)
    async with Agent(ScriptedModel(turn), toolsets=[server]) as agent:
        result, asked = await answer_all(agent, [InputAnswer("accept", {"name": "Ada"})])
    assert asked == ["What is your name?"]
    assert final_text(result) == "Done: for Ada: A fine line."
