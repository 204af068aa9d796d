"""What a model adapter costs per turn: callwright's against pydantic-ai's, same provider.

For each provider wire (OpenAI Responses, OpenAI Chat Completions, Anthropic Messages,
Gemini) and two turns (a text answer of 50 deltas; one tool call whose arguments come in
29 deltas, all at once for Gemini, whose API sends them whole), both adapters stream the
same recorded answer from the replay server of tests/models (its ``Replay`` handler and
the stream builders ``tests/models/_responses.py`` and ``_gemini.py``), run in a process
of its own so that its work is not counted. Each adapter talks through the provider's
official SDK, as it does in production; the figure is the CPU time of this process per
turn (``time.process_time``: the machine is shared, wall time would measure the
neighbours), from the request to the last event consumed. The two adapters alternate in
rounds so that both see the same machine; the ratio is callwright / pydantic-ai.

    python bench/adapter_overhead.py [--turns N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "tests"
WORDS = [f"word{i} " for i in range(50)]
ARGUMENTS = json.dumps({"text": " ".join(f"piece{i}" for i in range(60))})
SIZE = -(-len(ARGUMENTS) // 30)
PIECES = [ARGUMENTS[i : i + SIZE] for i in range(0, len(ARGUMENTS), SIZE)]
TOOL = {
    "name": "echo",
    "description": "Echo the text.",
    "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
}
PROVIDERS = ("responses", "chat", "anthropic", "gemini")
TURNS = ("text", "tool")


# --- the provider (a process of its own) ---------------------------------------------------


class Forever(list[Any]):
    """The replay server's queue of replies, answering every request with the same one."""

    def pop(self, index: Any = -1) -> Any:
        return self[0]


class Forgetful(list[Any]):
    """The replay server's record of requests, kept empty (a bench makes thousands)."""

    def append(self, item: Any) -> None:
        pass


def reply(provider: str, turn: str) -> Any:
    sys.path.insert(0, str(TESTS))
    from models.conftest import Replay

    replay = Replay()
    if provider == "responses":
        _responses(replay, turn)
    elif provider == "chat":
        _chat(replay, turn)
    elif provider == "anthropic":
        _anthropic(replay, turn)
    else:
        _gemini(replay, turn)
    return replay.replies[0]


def _responses(replay: Any, turn: str) -> None:
    from models._responses import Stream

    s = Stream().created()
    if turn == "text":
        s.message("msg_1", WORDS)
    else:
        s.call("fc_1", "call_1", "echo", PIECES)
    s.completed((20, 50)).send(replay)


def _chat(replay: Any, turn: str) -> None:
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    if turn == "text":
        chunks = [chunk({"role": "assistant", "content": ""})]
        chunks += [chunk({"content": w}) for w in WORDS] + [chunk({}, "stop")]
    else:
        start = {"index": 0, "id": "call_1", "type": "function"}
        chunks = [chunk({"tool_calls": [start | {"function": {"name": "echo", "arguments": ""}}]})]
        chunks += [
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in PIECES
        ]
        chunks += [chunk({}, "tool_calls")]
    tokens = {"prompt_tokens": 20, "completion_tokens": 50, "total_tokens": 70}
    chunks.append({**head, "choices": [], "usage": tokens})
    replay.sse(chunks)


def _anthropic(replay: Any, turn: str) -> None:
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
        TextBlock,
        TextDelta,
        ToolUseBlock,
    )
    from anthropic.types import Usage as AnthropicUsage
    from anthropic.types.raw_message_delta_event import Delta

    message = Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-x",
        content=[],
        stop_reason=None,
        stop_sequence=None,
        usage=AnthropicUsage(input_tokens=20, output_tokens=1),
    )
    events: list[Any] = [RawMessageStartEvent(type="message_start", message=message)]
    if turn == "text":
        block: Any = TextBlock(type="text", text="")
        deltas: list[Any] = [TextDelta(type="text_delta", text=w) for w in WORDS]
    else:
        block = ToolUseBlock(type="tool_use", id="toolu_1", name="echo", input={})
        deltas = [InputJSONDelta(type="input_json_delta", partial_json=p) for p in PIECES]
    events.append(
        RawContentBlockStartEvent(type="content_block_start", index=0, content_block=block)
    )
    events += [
        RawContentBlockDeltaEvent(type="content_block_delta", index=0, delta=d) for d in deltas
    ]
    reason: Any = "end_turn" if turn == "text" else "tool_use"
    events += [
        RawContentBlockStopEvent(type="content_block_stop", index=0),
        RawMessageDeltaEvent(
            type="message_delta",
            delta=Delta(stop_reason=reason, stop_sequence=None),
            usage=MessageDeltaUsage(output_tokens=50),
        ),
        RawMessageStopEvent(type="message_stop"),
    ]
    replay.sse([json.loads(e.model_dump_json()) for e in events], named=True, done=False)


def _gemini(replay: Any, turn: str) -> None:
    from models._gemini import call, chunk, text, usage

    if turn == "text":
        chunks = [chunk(text(w)) for w in WORDS[:-1]]
        chunks.append(chunk(text(WORDS[-1]), finish="STOP", tokens=usage(20, 50)))
    else:
        arguments = json.loads(ARGUMENTS)
        chunks = [chunk(call("echo", arguments, id="fc_1"), finish="STOP", tokens=usage(20, 50))]
    replay.sse(chunks, done=False)


def serve(provider: str, turn: str, port: Any) -> None:
    sys.path.insert(0, str(TESTS))
    from models.conftest import Replay, _handler

    replay = Replay()
    replay.replies = Forever([reply(provider, turn)])
    replay.requests = Forgetful()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(replay))
    server.daemon_threads = True
    port.put(server.server_address[1])
    server.serve_forever()


# --- the two adapters --------------------------------------------------------------------------


Turn = Callable[[], Awaitable[str]]
"""One model turn; returns what the model said (the text, or the call's name and arguments),
checked once before measuring so that both adapters are seen to read the whole answer."""


def callwright_turn(provider: str, turn: str, url: str) -> Turn:
    from callwright.messages import UserMessage
    from callwright.models import (
        ErrorPart,
        ModelRequest,
        TextPart,
        ToolCallDeltaPart,
        ToolCallStartPart,
    )
    from callwright.models.anthropic import AnthropicModel
    from callwright.models.gemini import GeminiModel
    from callwright.models.openai import OpenAIModel
    from callwright.models.openai_responses import OpenAIResponsesModel

    model: Any
    if provider == "responses":
        model = OpenAIResponsesModel("gpt-test", base_url=url + "/v1", api_key="k")
    elif provider == "chat":
        model = OpenAIModel("gpt-test", base_url=url + "/v1", api_key="k")
    elif provider == "anthropic":
        model = AnthropicModel("claude-x", base_url=url, api_key="k")
    else:
        model = GeminiModel("gemini-x", base_url=url, api_key="k")
    tools = [TOOL] if turn == "tool" else []

    async def one() -> str:
        request = ModelRequest([UserMessage("Say something.")], tools=tools)
        said = []
        async for event in model.stream(request):
            if isinstance(event, TextPart | ToolCallDeltaPart):
                said.append(event.delta)
            elif isinstance(event, ToolCallStartPart):
                said.append(event.name)
            elif isinstance(event, ErrorPart):
                raise RuntimeError(f"callwright {provider}: {event.message}")
        return "".join(said)

    return one


def pydantic_ai_turn(provider: str, turn: str, url: str) -> Turn:
    from pydantic_ai.messages import ModelRequest, TextPart, ToolCallPart, UserPromptPart
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.tools import ToolDefinition

    model: Any
    if provider in ("responses", "chat"):
        from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        kind = OpenAIResponsesModel if provider == "responses" else OpenAIChatModel
        model = kind("gpt-test", provider=OpenAIProvider(base_url=url + "/v1", api_key="k"))
    elif provider == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        model = AnthropicModel("claude-x", provider=AnthropicProvider(api_key="k", base_url=url))
    else:
        from pydantic_ai.models.google import GoogleModel
        from pydantic_ai.providers.google import GoogleProvider

        model = GoogleModel("gemini-x", provider=GoogleProvider(api_key="k", base_url=url))
    tools = []
    if turn == "tool":
        tools = [ToolDefinition(name="echo", description="Echo the text.",
                                parameters_json_schema=TOOL["parameters"])]  # fmt: skip
    parameters = ModelRequestParameters(function_tools=tools)

    async def one() -> str:
        messages: list[Any] = [ModelRequest(parts=[UserPromptPart("Say something.")])]
        stream: AbstractAsyncContextManager[Any] = model.request_stream(messages, None, parameters)
        async with stream as events:
            async for _ in events:
                pass
            response = events.get()
        said = []
        for part in response.parts:
            if isinstance(part, TextPart):
                said.append(part.content)
            elif isinstance(part, ToolCallPart):
                said.append(part.tool_name + part.args_as_json_str())
        return "".join(said)

    return one


# --- measuring -----------------------------------------------------------------------------


async def cpu_per_turn(turn: Turn, count: int) -> float:
    started = time.process_time()
    for _ in range(count):
        await turn()
    return (time.process_time() - started) / count


async def compare(provider: str, turn: str, url: str, turns: int) -> tuple[float, float]:
    ours, theirs = callwright_turn(provider, turn, url), pydantic_ai_turn(provider, turn, url)
    expected = "".join(WORDS) if turn == "text" else "echo"
    for said in (await ours(), await theirs()):
        shown = said.replace(" ", "")
        if not shown.startswith(expected.replace(" ", "")) or (
            turn == "tool" and json.loads(said[4:]) != json.loads(ARGUMENTS)
        ):
            raise RuntimeError(f"{provider} {turn}: the adapter read {said[:80]!r}")
    for warm in (ours, theirs):  # clients made, modules loaded, connections open
        for _ in range(5):
            await warm()
    rounds, size = [], max(1, turns // 10)
    for _ in range(10):
        rounds.append((await cpu_per_turn(ours, size), await cpu_per_turn(theirs, size)))
    return (
        statistics.median(r[0] for r in rounds),
        statistics.median(r[1] for r in rounds),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300, help="turns per adapter and case")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    print(f"CPU time per model turn (median of 10 rounds of {max(1, args.turns // 10)} turns)")
    print(f"{'provider':<10} {'turn':<5} {'callwright':>11} {'pydantic-ai':>12} {'ratio':>6}")
    for provider in PROVIDERS:
        for turn in TURNS:
            port = context.Queue()
            server = context.Process(target=serve, args=(provider, turn, port), daemon=True)
            server.start()
            try:
                url = f"http://127.0.0.1:{port.get(timeout=60)}"
                ours, theirs = asyncio.run(compare(provider, turn, url, args.turns))
            finally:
                server.terminate()
                server.join()
            print(
                f"{provider:<10} {turn:<5} {ours * 1000:>9.2f}ms {theirs * 1000:>10.2f}ms "
                f"{ours / theirs:>6.2f}"
            )


if __name__ == "__main__":
    main()
