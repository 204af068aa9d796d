"""An MCP server's sampling requests, against server-everything's ``trigger-sampling-request``.

Off by default: the capability is not declared and server-everything, which honours
it, does not list the tool. With ``sampling=``, the request is answered by the run's
own model with the server's messages only, no tools, a token cap (the server's
``maxTokens`` or ``Sampling.max_tokens``, the smaller) and a request cap per call, and
what it cost is in the run's usage.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest

from callwright import Agent
from callwright.context import CancelToken, RunScope, ToolContext
from callwright.mcp import MCPServer, Sampling, load_mcp_config
from callwright.mcp._calls import _ROUTE, Calls, Route
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.models.base import ErrorPart
from callwright.state import RunState
from callwright.toolbox import Toolbox
from callwright.usage import Usage

ASKED = "Resource trigger-sampling-request context: "
ANSWER = "The answer is forty-two, said the model."


def model(answer: str = ANSWER, **arguments: Any) -> ScriptedModel:
    """Calls the sampling tool; answers a sampling request with ``answer``; then says
    ``Done: <the tool's result>``."""

    def turn(request: ModelRequest) -> list[Any]:
        first = request.messages[0]
        if isinstance(first, UserMessage) and first.content.startswith(ASKED):
            return [answer]
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if results:
            return [f"Done: {results[-1].content}"]
        return [call("trigger-sampling-request", {"prompt": "what is it?", **arguments})]

    return ScriptedModel(turn)


def sampled(result: Any) -> dict[str, Any]:
    """The CreateMessageResult server-everything got back, from the tool's text."""
    text = result.output.removeprefix("Done: LLM sampling result: \n")
    parsed: dict[str, Any] = json.loads(text)
    return parsed


async def test_off_by_default_the_sampling_tool_is_not_offered(everything: MCPServer) -> None:
    async with Agent(ScriptedModel([["hi"]]), toolsets=[everything]) as agent:
        await agent.toolbox.ready()
        names = agent.toolbox.names
    assert "echo" in names and "trigger-elicitation-request" in names
    assert "trigger-sampling-request" not in names


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_runs_model_answers_and_the_run_pays(
    transport: str, everything_stdio: Any, everything_http: Any
) -> None:
    server = (
        everything_stdio(sampling=True)
        if transport == "stdio"
        else MCPServer.http(everything_http.url, name="everything", sampling=True)
    )
    scripted = model()
    async with Agent(scripted, toolsets=[server]) as agent:
        result = await agent.run("sample")
    answer = sampled(result)
    assert answer == {
        "role": "assistant",
        "content": {"type": "text", "text": ANSWER},
        "model": "scripted",
        "stopReason": "endTurn",
    }
    asked = scripted.requests[1]  # the run's first turn, then the server's request
    assert [type(m).__name__ for m in asked.messages] == ["UserMessage"]
    assert asked.messages[0].content == ASKED + "what is it?"  # type: ignore[union-attr]
    assert asked.instructions == "You are a helpful test server."
    assert asked.tools == [] and asked.cancel is not None
    assert result.usage == Usage(30, 15, 3)  # two turns of the run, one for the server


@pytest.mark.parametrize(
    ("sampling", "max_tokens", "cut"),
    [(Sampling(max_tokens=3), 100, 12), (True, 2, 8)],
    ids=["our-cap", "servers-maxTokens"],
)
async def test_the_answer_is_cut_at_the_token_cap(
    everything_stdio: Any, sampling: Any, max_tokens: int, cut: int
) -> None:
    long = "word " * 400
    async with Agent(
        model(long, maxTokens=max_tokens), toolsets=[everything_stdio(sampling=sampling)]
    ) as agent:
        result = await agent.run("sample")
    answer = sampled(result)
    assert answer["content"]["text"] == long[:cut]
    assert answer["stopReason"] == "maxTokens"
    assert result.usage.requests == 3
    assert result.usage.output_tokens == 5 + 5 + cut // 4  # the cut answer's estimate


def test_the_config_file_turns_sampling_on() -> None:
    servers = load_mcp_config(
        {
            "mcpServers": {
                "a": {"command": "x", "sampling": True},
                "b": {"command": "x", "sampling": {"maxTokens": 200}},
                "c": {"command": "x"},
            }
        }
    )
    assert [s.sampling for s in servers] == [True, Sampling(max_tokens=200), False]
    with pytest.raises(ValueError, match="sampling is true, false or"):
        load_mcp_config({"mcpServers": {"d": {"command": "x", "sampling": {"maxTokens": 0}}}})


def params(text: str = "hi", **options: Any) -> types.CreateMessageRequestParams:
    message = types.SamplingMessage(role="user", content=types.TextContent(text=text))
    return types.CreateMessageRequestParams(messages=[message], max_tokens=50, **options)


async def test_refusals_the_server_reads() -> None:
    """More requests than a call may make, tools offered, an image sent, no call running:
    each is an error the server sees, and the model is not asked."""
    scripted = ScriptedModel([["one"], ["two"]])
    scope = RunScope("r", "t", Toolbox(), RunState({}), None, CancelToken(), Usage(), scripted)
    calls = Calls("srv", 60, Sampling(max_requests=1))
    assert isinstance(await calls.sample(None, params()), types.ErrorData)  # no call running
    token = _ROUTE.set(Route(ToolContext("c1", "tool", run=scope)))
    try:
        first = await calls.sample(None, params())
        second = await calls.sample(None, params())
    finally:
        _ROUTE.reset(token)
    assert isinstance(first, types.CreateMessageResult) and first.content.text == "one"  # type: ignore[union-attr]
    assert isinstance(second, types.ErrorData)
    assert second.message == "this tool call has made its 1 sampling requests"
    token = _ROUTE.set(Route(ToolContext("c2", "tool", run=scope)))
    try:
        tool = types.Tool(name="x", input_schema={"type": "object"})
        offered = await calls.sample(None, params(tools=[tool]))
        image = types.SamplingMessage(
            role="user", content=types.ImageContent(data="AA==", mime_type="image/png")
        )
        pictured = await calls.sample(
            None, types.CreateMessageRequestParams(messages=[image], max_tokens=5)
        )
    finally:
        _ROUTE.reset(token)
    assert isinstance(offered, types.ErrorData) and "no tools" in offered.message
    assert isinstance(pictured, types.ErrorData) and "text only" in pictured.message
    assert len(scripted.requests) == 1 and scope.usage == Usage(10, 5, 1)


async def test_a_failing_model_is_an_error_the_server_sees(everything_stdio: Any) -> None:
    def turn(request: ModelRequest) -> list[Any]:
        first = request.messages[0]
        if isinstance(first, UserMessage) and first.content.startswith(ASKED):
            return [ErrorPart("the provider is down", code="model_error")]
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if results:
            return [f"Done: {results[-1].content}" + (" (error)" if results[-1].is_error else "")]
        return [call("trigger-sampling-request", {"prompt": "what is it?"})]

    async with Agent(ScriptedModel(turn), toolsets=[everything_stdio(sampling=True)]) as agent:
        result = await agent.run("sample")
    assert "the model failed: the provider is down" in result.output
    assert result.output.endswith("(error)")
