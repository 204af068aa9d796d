"""The Anthropic adapter, fed recorded Messages API streams built from the SDK's own types
and served over real HTTP to the real SDK."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from anthropic.types import (
    InputJSONDelta,
    Message,
    MessageDeltaUsage,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    SignatureDelta,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
)
from anthropic.types import Usage as AnthropicUsage
from anthropic.types.raw_message_delta_event import Delta

from callwright import Agent, ConfigurationError, ModelSettings, tool
from callwright.events import ToolCallResult
from callwright.messages import UserMessage
from callwright.models._retry import RetryPolicy
from callwright.models.anthropic import AnthropicModel
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

FAST = RetryPolicy(max_attempts=3, base_delay=0.01)


def start(input_tokens: int = 10, cached: int = 0) -> RawMessageStartEvent:
    return RawMessageStartEvent(
        type="message_start",
        message=Message(
            id="msg_1",
            type="message",
            role="assistant",
            model="claude-x",
            content=[],
            stop_reason=None,
            stop_sequence=None,
            usage=AnthropicUsage(
                input_tokens=input_tokens, output_tokens=1, cache_read_input_tokens=cached
            ),
        ),
    )


def block(index: int, content: Any) -> RawContentBlockStartEvent:
    return RawContentBlockStartEvent(type="content_block_start", index=index, content_block=content)


def delta(index: int, d: Any) -> RawContentBlockDeltaEvent:
    return RawContentBlockDeltaEvent(type="content_block_delta", index=index, delta=d)


def stop(index: int) -> RawContentBlockStopEvent:
    return RawContentBlockStopEvent(type="content_block_stop", index=index)


def end(reason: str, output_tokens: int) -> list[Any]:
    return [
        RawMessageDeltaEvent(
            type="message_delta",
            delta=Delta(stop_reason=reason, stop_sequence=None),  # type: ignore[arg-type]
            usage=MessageDeltaUsage(output_tokens=output_tokens),
        ),
        RawMessageStopEvent(type="message_stop"),
    ]


def text_block(index: int) -> TextBlock:
    return TextBlock(type="text", text="")


def tool_block(id: str, name: str) -> ToolUseBlock:
    return ToolUseBlock(type="tool_use", id=id, name=name, input={})


def record(replay: Any, events: list[Any]) -> None:
    replay.sse([json.loads(e.model_dump_json()) for e in events], named=True, done=False)


def model(replay: Any, **kw: Any) -> AnthropicModel:
    return AnthropicModel("claude-x", api_key="k", base_url=replay.url, retry=FAST, **kw)


async def collect(m: AnthropicModel) -> list[Any]:
    return [e async for e in m.stream(ModelRequest([UserMessage("hi")]))]


async def test_thinking_text_and_tool_use_stream(replay: Any) -> None:
    record(
        replay,
        [
            start(input_tokens=12, cached=100),
            block(0, ThinkingBlock(type="thinking", thinking="", signature="")),
            delta(0, ThinkingDelta(type="thinking_delta", thinking="The user wants ")),
            delta(0, ThinkingDelta(type="thinking_delta", thinking="a sum.")),
            delta(0, SignatureDelta(type="signature_delta", signature="sig")),
            stop(0),
            block(1, text_block(1)),
            delta(1, TextDelta(type="text_delta", text="Let me add.")),
            stop(1),
            block(2, tool_block("toolu_1", "calculate")),
            delta(2, InputJSONDelta(type="input_json_delta", partial_json="")),
            delta(2, InputJSONDelta(type="input_json_delta", partial_json='{"expression": ')),
            delta(2, InputJSONDelta(type="input_json_delta", partial_json='"2 + 2"}')),
            stop(2),
            *end("tool_use", 33),
        ],
    )
    events = await collect(model(replay, thinking_budget=1024))
    assert events == [
        ReasoningPart("The user wants "),
        ReasoningPart("a sum."),
        TextPart("Let me add."),
        ToolCallStartPart("toolu_1", "calculate"),
        ToolCallDeltaPart("toolu_1", '{"expression": '),
        ToolCallDeltaPart("toolu_1", '"2 + 2"}'),
        ToolCallEndPart("toolu_1"),
        FinishPart("tool-calls", Usage(112, 33, 1, cached_input_tokens=100)),
    ]
    body = replay.requests[0]["json"]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    headers = replay.requests[0]["headers"]
    key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
    assert key == "k"


async def test_parallel_tool_uses(replay: Any) -> None:
    record(
        replay,
        [
            start(),
            block(0, tool_block("toolu_a", "read_file")),
            delta(0, InputJSONDelta(type="input_json_delta", partial_json='{"path": "a.txt"}')),
            stop(0),
            block(1, tool_block("toolu_b", "list_files")),
            delta(1, InputJSONDelta(type="input_json_delta", partial_json="{}")),
            stop(1),
            *end("tool_use", 20),
        ],
    )
    events = await collect(model(replay))
    starts = [e for e in events if isinstance(e, ToolCallStartPart)]
    ends = [e for e in events if isinstance(e, ToolCallEndPart)]
    assert [(s.call_id, s.name) for s in starts] == [
        ("toolu_a", "read_file"),
        ("toolu_b", "list_files"),
    ]
    assert [e.call_id for e in ends] == ["toolu_a", "toolu_b"]


async def test_an_agent_round_trip_sends_tool_results_back(replay: Any) -> None:
    @tool
    def calculate(expression: str) -> str:
        """Calculate."""
        return "4"

    record(
        replay,
        [
            start(),
            block(0, tool_block("toolu_1", "calculate")),
            delta(0, InputJSONDelta(type="input_json_delta", partial_json='{"expression": "2+2"}')),
            stop(0),
            *end("tool_use", 9),
        ],
    )
    record(
        replay,
        [
            start(30),
            block(0, text_block(0)),
            delta(0, TextDelta(type="text_delta", text="It is 4.")),
            stop(0),
            *end("end_turn", 5),
        ],
    )
    agent = Agent(model(replay), [calculate], instructions="Be brief.")
    events = [e async for e in agent.stream("2+2?")]
    assert [e.content for e in events if isinstance(e, ToolCallResult)] == ["4"]
    assert events[-1].output == "It is 4."
    first, second = (r["json"] for r in replay.requests)
    assert first["system"] == "Be brief."
    assert first["tools"][0]["input_schema"]["properties"]["expression"]["type"] == "string"
    assert first["tool_choice"] == {"type": "auto"}
    assert second["messages"][1] == {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "calculate",
                "input": {"expression": "2+2"},
            }
        ],
    }
    assert second["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "4"}],
    }


async def test_overloaded_is_retried(replay: Any) -> None:
    replay.reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
    record(
        replay,
        [
            start(),
            block(0, text_block(0)),
            delta(0, TextDelta(type="text_delta", text="ok")),
            stop(0),
            *end("end_turn", 1),
        ],
    )
    started = time.monotonic()
    events = await collect(model(replay))
    assert [e.delta for e in events if isinstance(e, TextPart)] == ["ok"]
    assert len(replay.requests) == 2 and time.monotonic() - started < 3


async def test_an_error_event_mid_stream_ends_the_step(replay: Any) -> None:
    replay.sse(
        [
            json.loads(start().model_dump_json()),
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        ],
        named=True,
        done=False,
    )
    events = await collect(model(replay))
    assert isinstance(events[-1], ErrorPart)
    assert "Overloaded" in events[-1].message
    assert len(replay.requests) == 1  # nothing is retried once the stream has begun


async def test_authentication_error_is_clear_and_not_retried(replay: Any) -> None:
    replay.reply(
        401, {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
    )
    events = await collect(model(replay))
    assert events == [ErrorPart("the model provider answered 401: bad key", "http_401")]


async def test_missing_key_is_a_configuration_error(monkeypatch: Any) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    events = [e async for e in AnthropicModel("c").stream(ModelRequest([UserMessage("hi")]))]
    assert len(events) == 1 and events[0].code == "configuration_error"


async def test_a_failed_call_is_sent_with_is_error(replay: Any) -> None:
    from callwright import ToolError

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        raise ToolError(f"no file named {path!r} in the sandbox")

    record(
        replay,
        [
            start(),
            block(0, tool_block("toolu_1", "read_file")),
            delta(0, InputJSONDelta(type="input_json_delta", partial_json='{"path": "x"}')),
            stop(0),
            *end("tool_use", 9),
        ],
    )
    record(replay, [start(), block(0, text_block(0)), stop(0), *end("end_turn", 1)])
    await Agent(model(replay), [read_file]).run("read x")
    assert replay.requests[1]["json"]["messages"][-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "no file named 'x' in the sandbox",
                "is_error": True,
            }
        ],
    }


async def test_thinking_blocks_go_back_unchanged_in_a_two_step_tool_run(replay: Any) -> None:
    from anthropic.types import RedactedThinkingBlock

    from callwright.messages import AssistantMessage, message_from_dict, message_to_dict

    @tool
    def calculate(expression: str) -> str:
        """Calculate."""
        return "4"

    record(
        replay,
        [
            start(),
            block(0, ThinkingBlock(type="thinking", thinking="", signature="")),
            delta(0, ThinkingDelta(type="thinking_delta", thinking="Add ")),
            delta(0, ThinkingDelta(type="thinking_delta", thinking="them.")),
            delta(0, SignatureDelta(type="signature_delta", signature="c2lnLTE=")),
            stop(0),
            block(1, RedactedThinkingBlock(type="redacted_thinking", data="ZW5jcnlwdGVk")),
            stop(1),
            block(2, text_block(2)),
            delta(2, TextDelta(type="text_delta", text="Adding.")),
            stop(2),
            block(3, tool_block("toolu_1", "calculate")),
            delta(3, InputJSONDelta(type="input_json_delta", partial_json='{"expression": "2+2"}')),
            stop(3),
            *end("tool_use", 20),
        ],
    )
    record(
        replay,
        [
            start(),
            block(0, text_block(0)),
            delta(0, TextDelta(type="text_delta", text="It is 4.")),
            stop(0),
            *end("end_turn", 5),
        ],
    )
    agent = Agent(model(replay, thinking_budget=1024), [calculate])
    result = await agent.run("2+2?")
    assert result.output == "It is 4."
    thinking = [
        {"type": "thinking", "thinking": "Add them.", "signature": "c2lnLTE="},
        {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
    ]
    second = replay.requests[1]["json"]
    assert second["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert second["messages"][1] == {
        "role": "assistant",
        "content": [
            *thinking,
            {"type": "text", "text": "Adding."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "calculate",
                "input": {"expression": "2+2"},
            },
        ],
    }
    # kept on the message, through the journal's form, and sent again in a later run
    reply = next(m for m in result.messages if isinstance(m, AssistantMessage) and m.tool_calls)
    assert reply.provider_blocks == {"anthropic": thinking}
    again = [message_from_dict(message_to_dict(m)) for m in result.messages]
    assert again == result.messages
    record(replay, [start(), block(0, text_block(0)), stop(0), *end("end_turn", 1)])
    await agent.run([*again, UserMessage("thanks")])
    assert replay.requests[2]["json"]["messages"][1]["content"][:2] == thinking


async def test_other_adapters_ignore_anthropic_blocks() -> None:
    from callwright.messages import AssistantMessage
    from callwright.models.openai import chat_messages

    message = AssistantMessage("Hi.", provider_blocks={"anthropic": [{"type": "thinking"}]})
    assert chat_messages([message], None) == [{"role": "assistant", "content": "Hi."}]


async def test_settings_map_to_messages_parameters(replay: Any) -> None:
    record(
        replay,
        [
            start(),
            block(0, text_block(0)),
            delta(0, TextDelta(type="text_delta", text="ok")),
            stop(0),
            *end("end_turn", 1),
        ],
    )
    settings = ModelSettings(
        temperature=0.3, max_tokens=50, top_p=0.9, parallel_tool_calls=False, extra={"top_k": 5}
    )
    tools = [{"name": "calculate", "description": "", "parameters": {"type": "object"}}]
    request = ModelRequest([UserMessage("hi")], tools=tools, tool_choice="required")
    request.settings = settings
    events = await collect_request(model(replay, max_tokens=4096), request)
    assert isinstance(events[-1], FinishPart)
    body = replay.requests[0]["json"]
    assert body["temperature"] == 0.3 and body["top_p"] == 0.9 and body["top_k"] == 5
    assert body["max_tokens"] == 50
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert "parallel_tool_calls" not in body


async def test_reasoning_effort_is_the_output_configs(replay: Any) -> None:
    record(
        replay,
        [
            start(),
            block(0, text_block(0)),
            delta(0, TextDelta(type="text_delta", text="ok")),
            stop(0),
            *end("end_turn", 1),
        ],
    )
    request = ModelRequest([UserMessage("hi")], settings=ModelSettings(reasoning_effort="low"))
    events = await collect_request(model(replay), request)
    assert isinstance(events[-1], FinishPart)
    assert replay.requests[0]["json"]["output_config"] == {"effort": "low"}


async def test_an_effort_anthropic_lacks_is_refused_by_name(replay: Any) -> None:
    m = model(replay)
    request = ModelRequest([UserMessage("hi")], settings=ModelSettings(reasoning_effort="minimal"))
    events = await collect_request(m, request)
    assert len(events) == 1 and isinstance(events[0], ErrorPart)
    assert events[0].code == "configuration_error"
    assert "cannot take the setting reasoning_effort='minimal'" in events[0].message
    assert replay.requests == []
    agent = Agent(m)
    with pytest.raises(ConfigurationError, match="reasoning_effort"):
        await agent.run("hi", settings=ModelSettings(reasoning_effort="minimal"))


async def collect_request(m: AnthropicModel, request: ModelRequest) -> list[Any]:
    return [e async for e in m.stream(request)]


async def test_the_adapters_own_settings_reach_the_body_under_the_runs(replay: Any) -> None:
    record(
        replay,
        [
            start(),
            block(0, text_block(0)),
            delta(0, TextDelta(type="text_delta", text="ok")),
            stop(0),
            *end("end_turn", 1),
        ],
    )
    m = model(replay, temperature=0.5, top_k=3, metadata={"user_id": "u"})
    request = ModelRequest([UserMessage("hi")], settings=ModelSettings(temperature=0.1))
    events = await collect_request(m, request)
    assert isinstance(events[-1], FinishPart)
    body = replay.requests[0]["json"]
    assert body["temperature"] == 0.1 and body["top_k"] == 3
    assert body["metadata"] == {"user_id": "u"}
