"""The OpenAI-compatible adapter, through the real SDK over real HTTP to a replay server."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from callwright import Agent, CancelToken, ConfigurationError, ModelSettings, tool
from callwright.events import ToolCallResult
from callwright.messages import UserMessage
from callwright.models._provider import Provider
from callwright.models._retry import RetryPolicy
from callwright.models.base import (
    ErrorPart,
    FinishPart,
    ModelRequest,
    ReasoningPart,
    TextPart,
    ToolCallDeltaPart,
    ToolCallEndPart,
    ToolCallStartPart,
    Usage,
)
from callwright.models.openai import OpenAIModel

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=5.0)


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": choices,
        **extra,
    }


def usage(prompt: int, completion: int) -> dict:
    return chunk(
        None,
        usage={
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    )


def tc(
    index: int | None, *, id: str | None = None, name: str | None = None, args: str = ""
) -> dict:
    function: dict[str, Any] = {"arguments": args}
    if name is not None:
        function["name"] = name
    piece: dict[str, Any] = {"type": "function", "function": function}
    if index is not None:
        piece["index"] = index
    if id is not None:
        piece["id"] = id
    return chunk({"tool_calls": [piece]})


def model(replay: Any, **kw: Any) -> OpenAIModel:
    return OpenAIModel("m", base_url=replay.url + "/v1", api_key="k", retry=FAST, **kw)


async def collect(m: OpenAIModel, request: ModelRequest | None = None) -> list[Any]:
    request = request or ModelRequest([UserMessage("hi")])
    return [e async for e in m.stream(request)]


def calls_of(events: list[Any]) -> list[tuple[str, str, dict]]:
    names, args, order = {}, {}, []
    for e in events:
        if isinstance(e, ToolCallStartPart):
            names[e.call_id], args[e.call_id] = e.name, ""
            order.append(e.call_id)
        elif isinstance(e, ToolCallDeltaPart):
            args[e.call_id] += e.delta
    ended = [e.call_id for e in events if isinstance(e, ToolCallEndPart)]
    assert sorted(ended) == sorted(order)
    return [(i, names[i], json.loads(args[i])) for i in order]


async def test_text_streams_with_usage_and_finish(replay: Any) -> None:
    replay.sse(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo"}),
            chunk({}, "stop"),
            usage(11, 2),
        ]
    )
    events = await collect(model(replay))
    assert [e.delta for e in events if isinstance(e, TextPart)] == ["Hel", "lo"]
    assert events[-1] == FinishPart("stop", Usage(11, 2, 1))
    sent = replay.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["json"]["stream"] is True
    assert sent["json"]["stream_options"] == {"include_usage": True}
    assert sent["headers"]["authorization"] == "Bearer k"


async def test_tool_call_chunks_merge_by_index_with_repeated_id_and_name(replay: Any) -> None:
    # llama.cpp-style servers repeat the id and name in every chunk
    replay.sse(
        [
            tc(0, id="call_a", name="calculate", args=""),
            tc(0, id="call_a", name="calculate", args='{"expr'),
            tc(0, id="call_a", name="calculate", args='ession": "1 +'),
            tc(0, id="call_a", name="calculate", args=' 2"}'),
            chunk({}, "tool_calls"),
        ]
    )
    events = await collect(model(replay))
    starts = [e for e in events if isinstance(e, ToolCallStartPart)]
    assert starts == [ToolCallStartPart("call_a", "calculate")]
    assert calls_of(events) == [("call_a", "calculate", {"expression": "1 + 2"})]
    assert isinstance(events[-1], FinishPart) and events[-1].reason == "tool-calls"


async def test_parallel_tool_calls_interleaved(replay: Any) -> None:
    replay.sse(
        [
            tc(0, id="c0", name="read_file", args='{"path":'),
            tc(1, id="c1", name="calculate", args='{"expression":'),
            tc(0, args=' "a.txt"}'),
            tc(1, args=' "2*3"}'),
            chunk({}, "tool_calls"),
            usage(5, 7),
        ]
    )
    events = await collect(model(replay))
    assert calls_of(events) == [
        ("c0", "read_file", {"path": "a.txt"}),
        ("c1", "calculate", {"expression": "2*3"}),
    ]
    assert events[-1] == FinishPart("tool-calls", Usage(5, 7, 1))


async def test_missing_index_and_arguments_before_the_name(replay: Any) -> None:
    replay.sse(
        [
            tc(None, id="x1", args=""),
            tc(None, name="list_files", args="{"),
            tc(None, args="}"),
            tc(None, id="x2", name="calculate", args='{"expression": "1"}'),
            chunk({}, "tool_calls"),
        ]
    )
    events = await collect(model(replay))
    assert calls_of(events) == [
        ("x1", "list_files", {}),
        ("x2", "calculate", {"expression": "1"}),
    ]


async def test_reasoning_deltas(replay: Any) -> None:
    replay.sse(
        [
            chunk({"reasoning_content": "Let me "}),
            chunk({"reasoning_content": "think."}),
            chunk({"reasoning": "vLLM style."}),
            chunk({"content": "42"}, "stop"),
        ]
    )
    events = await collect(model(replay))
    assert [e.delta for e in events if isinstance(e, ReasoningPart)] == [
        "Let me ",
        "think.",
        "vLLM style.",
    ]
    assert [e.delta for e in events if isinstance(e, TextPart)] == ["42"]


async def test_rate_limit_is_retried_after_retry_after(replay: Any) -> None:
    replay.reply(429, {"error": {"message": "slow down"}}, {"retry-after": "0.3"})
    replay.sse([chunk({"content": "ok"}, "stop")])
    started = time.monotonic()
    events = await collect(model(replay))
    assert time.monotonic() - started >= 0.3
    assert [e.delta for e in events if isinstance(e, TextPart)] == ["ok"]
    assert len(replay.requests) == 2


async def test_other_errors_end_the_step_with_a_clear_error(replay: Any) -> None:
    replay.reply(400, {"error": {"message": "model not found: m"}})
    events = await collect(model(replay))
    assert len(events) == 1 and isinstance(events[0], ErrorPart)
    assert events[0].code == "http_400"
    assert "model not found: m" in events[0].message
    assert len(replay.requests) == 1


async def test_network_errors_are_retried_then_reported() -> None:
    m = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="k", retry=FAST)
    events = await collect(m)
    assert len(events) == 1 and isinstance(events[0], ErrorPart)
    assert events[0].code == "connection_error"
    assert "3 attempts" in events[0].message


async def test_cancellation_stops_a_retry_wait_at_once(replay: Any) -> None:
    replay.reply(429, {"error": {"message": "busy"}}, {"retry-after": "30"})
    cancel = CancelToken()
    request = ModelRequest([UserMessage("hi")], cancel=cancel)
    asyncio.get_running_loop().call_later(0.2, cancel.cancel, "user")
    started = time.monotonic()
    events = await asyncio.wait_for(collect(model(replay), request), 5)
    assert time.monotonic() - started < 2
    assert not any(isinstance(e, TextPart) for e in events)


async def test_cancellation_stops_a_slow_stream(replay: Any) -> None:
    replay.sse([chunk({"content": f"{i} "}) for i in range(50)], delay=0.1)
    cancel = CancelToken()
    request = ModelRequest([UserMessage("hi")], cancel=cancel)
    asyncio.get_running_loop().call_later(0.35, cancel.cancel, "user")
    started = time.monotonic()
    events = await collect(model(replay), request)
    assert time.monotonic() - started < 2
    assert 0 < len([e for e in events if isinstance(e, TextPart)]) < 10


async def test_an_agent_calls_a_tool_and_sends_the_result_back(replay: Any) -> None:
    seen: list[str] = []

    @tool
    def calculate(expression: str) -> str:
        """Calculate."""
        seen.append(expression)
        return "3"

    replay.sse(
        [
            tc(0, id="call_1", name="calculate", args='{"expression":'),
            tc(0, args=' "1+2"}'),
            chunk({}, "tool_calls"),
            usage(20, 9),
        ]
    )
    replay.sse([chunk({"content": "It is 3."}, "stop"), usage(40, 4)])
    agent = Agent(model(replay), [calculate], instructions="Be brief.")
    events = [e async for e in agent.stream("What is 1+2?")]
    results = [e for e in events if isinstance(e, ToolCallResult)]
    assert seen == ["1+2"] and results[0].content == "3"
    assert agent.mode == "native"
    first, second = (r["json"] for r in replay.requests)
    assert first["tools"][0]["function"]["name"] == "calculate"
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_1"
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "3"}
    finished = events[-1]
    assert finished.output == "It is 3."
    assert finished.usage.input_tokens == 60 and finished.usage.output_tokens == 13


async def test_structured_mode_uses_response_format_and_decodes_calls(replay: Any) -> None:
    @tool
    def calculate(expression: str) -> str:
        """Calculate."""
        return str(eval(expression, {"__builtins__": {}}))  # test-only, fixed input

    doc = json.dumps(
        {"meta": {}, "calls": [{"_tool": "calculate", "expression": "6*7"}], "output": None}
    )
    replay.sse(
        [chunk({"content": doc[i : i + 9]}) for i in range(0, len(doc), 9)] + [chunk({}, "stop")]
    )
    replay.sse([chunk({"content": '{"meta": {}, "calls": [], "output": "42"}'}, "stop")])
    agent = Agent(model(replay, mode="structured"), [calculate])
    result = await agent.run("6*7?")
    assert result.output == "42"
    body = replay.requests[0]["json"]
    assert body["response_format"]["type"] == "json_schema"
    assert "tools" not in body
    items = body["response_format"]["json_schema"]["schema"]["properties"]["calls"]["items"]
    assert items["properties"]["_tool"] == {"const": "calculate"}
    # the model's own turn comes back as the document it wrote, the result as a user turn
    second = replay.requests[1]["json"]["messages"]
    assert json.loads(second[-2]["content"])["calls"] == [
        {"_tool": "calculate", "expression": "6*7"}
    ]
    assert second[-1] == {"role": "user", "content": "Tool calculate result: 42"}


async def test_every_kind_of_failed_call_reaches_the_model_marked_as_an_error(
    replay: Any,
) -> None:
    from callwright import ToolError
    from callwright.call import Cancelled, Denied, Interrupted
    from callwright.messages import AssistantMessage, ToolCallPart, ToolResultMessage

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        raise ToolError(f"no file named {path!r} in the sandbox")

    @tool(timeout=0.05)
    async def slow() -> str:
        """Take too long."""
        await asyncio.sleep(5)
        return "late"

    replay.sse(
        [
            tc(0, id="c_fail", name="read_file", args='{"path": "x"}'),
            tc(1, id="c_missing", name="nope", args="{}"),
            tc(2, id="c_args", name="read_file", args='{"path": 3}'),
            tc(3, id="c_slow", name="slow", args="{}"),
            chunk({}, "tool_calls"),
        ]
    )
    replay.sse([chunk({"content": "Sorry."}, "stop")])
    # cancelled, denied and interrupted calls as a paused or recovered run's history has them
    earlier = AssistantMessage(
        tool_calls=[ToolCallPart(i, "read_file", {"path": "y"}) for i in ("h1", "h2", "h3")]
    )
    history = [
        UserMessage("first"),
        earlier,
        ToolResultMessage("h1", "read_file", Cancelled().model_text(), True),
        ToolResultMessage("h2", "read_file", Denied("not today").model_text(), True),
        ToolResultMessage("h3", "read_file", Interrupted().model_text(), True),
        UserMessage("read x"),
    ]
    agent = Agent(model(replay), [read_file, slow])
    await agent.run(history)
    sent = {
        m["tool_call_id"]: m["content"]
        for m in replay.requests[1]["json"]["messages"]
        if m["role"] == "tool"
    }
    assert sent["c_fail"] == "Error: no file named 'x' in the sandbox"
    assert sent["c_missing"].startswith("Error: Tool not found: nope.")
    assert sent["c_args"].startswith("Error: Invalid arguments: ")
    assert sent["c_slow"] == "Error: Timed out after 0.05 seconds."
    assert sent["h1"] == "Error: Cancelled"
    assert sent["h2"] == "Error: Tool call denied: not today"
    assert sent["h3"].startswith("Error: Interrupted: the server stopped")


async def test_structured_mode_marks_a_failed_call(replay: Any) -> None:
    from callwright import ToolError

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        raise ToolError("no such file")

    doc = json.dumps({"meta": {}, "calls": [{"_tool": "read_file", "path": "x"}], "output": None})
    replay.sse([chunk({"content": doc}, "stop")])
    replay.sse([chunk({"content": '{"meta": {}, "calls": [], "output": "gone"}'}, "stop")])
    await Agent(model(replay, mode="structured"), [read_file]).run("read x")
    last = replay.requests[1]["json"]["messages"][-1]
    assert last == {"role": "user", "content": "Tool read_file error: no such file"}


async def test_usage_counts_cached_and_reasoning_tokens(replay: Any) -> None:
    replay.sse(
        [
            chunk({"content": "ok"}, "stop"),
            chunk(
                None,
                usage={
                    "prompt_tokens": 100,
                    "completion_tokens": 30,
                    "total_tokens": 130,
                    "prompt_tokens_details": {"cached_tokens": 64},
                    "completion_tokens_details": {"reasoning_tokens": 20},
                },
            ),
        ]
    )
    events = await collect(model(replay))
    assert events[-1] == FinishPart(
        "stop", Usage(100, 30, 1, cached_input_tokens=64, reasoning_tokens=20)
    )


async def test_settings_map_to_chat_completions_parameters(replay: Any) -> None:
    replay.sse([chunk({"content": "ok"}, "stop"), usage(5, 1)])
    settings = ModelSettings(
        temperature=0.3,
        max_tokens=50,
        top_p=0.9,
        parallel_tool_calls=False,
        reasoning_effort="low",
        extra={"seed": 7},
    )
    tools = [{"name": "calculate", "description": "", "parameters": {"type": "object"}}]
    request = ModelRequest([UserMessage("hi")], tools=tools, settings=settings)
    await collect(model(replay, temperature=1.0), request)
    body = replay.requests[0]["json"]
    assert body["temperature"] == 0.3 and body["top_p"] == 0.9 and body["seed"] == 7
    assert body["max_tokens"] == 50 and "max_completion_tokens" not in body
    assert body["parallel_tool_calls"] is False and body["reasoning_effort"] == "low"


async def test_a_provider_that_refuses_a_setting_names_it(replay: Any) -> None:
    refusing = Provider(
        "strict", "Strict", "", "STRICT_BASE_URL", package="openai", rejects=("top_p",)
    )
    m = OpenAIModel("m", base_url=replay.url + "/v1", api_key="k", provider=refusing)
    request = ModelRequest([UserMessage("hi")], settings=ModelSettings(top_p=0.5))
    events = [e async for e in m.stream(request)]
    assert events == [
        ErrorPart(
            "OpenAIModel (Strict) cannot take the setting top_p: "
            "leave ModelSettings.top_p unset for this model",
            "configuration_error",
        )
    ]
    assert replay.requests == []
    with pytest.raises(ConfigurationError, match="top_p"):
        Agent(m, settings=ModelSettings(top_p=0.5))


def test_openai_own_api_takes_max_completion_tokens() -> None:
    m = OpenAIModel("gpt-x", api_key="k", base_url="https://api.openai.com/v1")
    request = ModelRequest([UserMessage("hi")], settings=ModelSettings(max_tokens=9))
    body = m.params(request)
    assert body["max_completion_tokens"] == 9 and "max_tokens" not in body


async def test_run_settings_override_the_agents_field_by_field(replay: Any) -> None:
    replay.sse([chunk({"content": "a"}, "stop"), usage(5, 1)])
    replay.sse([chunk({"content": "b"}, "stop"), usage(5, 1)])
    agent = Agent(
        model(replay),
        settings=ModelSettings(temperature=0.1, top_p=0.5, extra={"seed": 1, "user": "u"}),
    )
    await agent.run("one")
    await agent.run("two", settings=ModelSettings(temperature=0.9, extra={"seed": 2}))
    first, second = (r["json"] for r in replay.requests)
    assert (first["temperature"], first["top_p"], first["seed"]) == (0.1, 0.5, 1)
    assert (second["temperature"], second["top_p"], second["seed"]) == (0.9, 0.5, 2)
    assert second["user"] == "u"


async def test_settings_tool_choice_is_every_steps_but_the_last(replay: Any) -> None:
    @tool
    def calculate(expression: str) -> str:
        """Calculate."""
        return "3"

    replay.sse([tc(0, id="call_1", name="calculate", args='{"expression": "1"}'), usage(5, 1)])
    replay.sse([chunk({"content": "3"}, "stop"), usage(5, 1)])
    agent = Agent(
        model(replay), [calculate], max_steps=2, settings=ModelSettings(tool_choice="required")
    )
    await agent.run("go")
    first, second = (r["json"] for r in replay.requests)
    assert first["tool_choice"] == "required"
    assert "tools" not in second


async def test_extras_the_sdk_does_not_name_still_reach_the_request_body(replay: Any) -> None:
    # OpenRouter's routing preferences, vLLM's sampling fields: not create()'s parameters
    replay.sse([chunk({"content": "ok"}), chunk({}, "stop"), usage(3, 1)])
    extra = {"provider": {"order": ["groq"]}, "top_k": 20, "seed": 7}
    request = ModelRequest([UserMessage("hi")], settings=ModelSettings(extra=extra))
    await collect(model(replay), request)
    body = replay.requests[0]["json"]
    assert body["provider"] == {"order": ["groq"]} and body["top_k"] == 20 and body["seed"] == 7
