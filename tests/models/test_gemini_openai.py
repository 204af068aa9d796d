"""Gemini through its OpenAI-compatible endpoint: the OpenAI adapter, through the real
openai SDK over real HTTP to a replay server sending Chat Completions chunks as that
endpoint does, keeps each call's ``extra_content`` (the thought signature) and sends it
back on the call, journal included."""

from __future__ import annotations

from typing import Any

from callwright import Agent, tool
from callwright.messages import AssistantMessage, message_from_dict, message_to_dict
from callwright.models._retry import RetryPolicy
from callwright.models.openai import OpenAIModel

FAST = RetryPolicy(max_attempts=2, base_delay=0.01)
SIGNATURE = "CiQBjz1rX+/signature/of+the/first/call=="
EXTRA = {"google": {"thought_signature": SIGNATURE}}


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "resp-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gemini-3-pro-preview",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def tool_call(index: int, id: str, args: str, extra: dict[str, Any] | None) -> dict[str, Any]:
    call: dict[str, Any] = {
        "index": index,
        "id": id,
        "type": "function",
        "function": {"name": "weather", "arguments": args},
    }
    if extra is not None:
        call["extra_content"] = extra
    return call


async def test_the_signature_in_extra_content_goes_back_on_its_call(replay: Any) -> None:
    @tool
    def weather(city: str) -> str:
        """The weather."""
        return f"sunny in {city}"

    calls = [
        tool_call(0, "function-call-1", '{"city": "Oslo"}', EXTRA),
        tool_call(1, "function-call-2", '{"city": "Rome"}', None),
    ]
    replay.sse([chunk({"role": "assistant", "tool_calls": calls}, "tool_calls")])
    replay.sse([chunk({"content": "Sunny in both."}, "stop")])
    agent = Agent(
        OpenAIModel("gemini-3-pro-preview", base_url=replay.url, api_key="k", retry=FAST), [weather]
    )
    result = await agent.run("Oslo and Rome?")
    assert result.output == "Sunny in both."
    assistant = replay.requests[1]["json"]["messages"][1]
    assert assistant["tool_calls"] == [
        {
            "id": "function-call-1",
            "type": "function",
            "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
            "extra_content": EXTRA,
        },
        {
            "id": "function-call-2",
            "type": "function",
            "function": {"name": "weather", "arguments": '{"city": "Rome"}'},
        },
    ]
    reply = next(m for m in result.messages if isinstance(m, AssistantMessage) and m.tool_calls)
    assert reply.provider_blocks == {
        "openai-compatible": [{"id": "function-call-1", "extra_content": EXTRA}]
    }
    again = [message_from_dict(message_to_dict(m)) for m in result.messages]
    assert again == result.messages


async def test_a_server_without_extra_content_sends_none(replay: Any) -> None:
    @tool
    def weather(city: str) -> str:
        """The weather."""
        return "sunny"

    replay.sse(
        [chunk({"tool_calls": [tool_call(0, "c1", '{"city": "Oslo"}', None)]}, "tool_calls")]
    )
    replay.sse([chunk({"content": "Sunny."}, "stop")])
    agent = Agent(OpenAIModel("m", base_url=replay.url, api_key="k", retry=FAST), [weather])
    await agent.run("Oslo?")
    assert "extra_content" not in replay.requests[1]["json"]["messages"][1]["tool_calls"][0]
