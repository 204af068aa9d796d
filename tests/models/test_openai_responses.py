"""The Responses adapter, through the real ``openai`` SDK over real HTTP to a replay server.

Every streamed event is built from the SDK's own types (``openai.types.responses``) and
sent as the Responses API sends it (``_responses.Stream``): ``event: <type>`` and
``data: <json>`` frames, with no ``[DONE]``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from openai.types.responses import (
    ResponseErrorEvent,
    ResponseFailedEvent,
    ResponseIncompleteEvent,
)
from pydantic import BaseModel

from callwright import (
    Agent,
    FilePart,
    MessageHistory,
    ModelSettings,
    RunFailed,
    ToolError,
    tool,
)
from callwright.events import ReasoningDelta, ToolCallResult
from callwright.messages import AssistantMessage, UserMessage, message_from_dict, message_to_dict
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
from callwright.models.openai_responses import OpenAIResponsesModel
from models._responses import Stream, dumped

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=5.0)


def model(replay: Any, **kw: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(
        "gpt-test", base_url=replay.url + "/v1", api_key="k", retry=FAST, **kw
    )


async def collect(m: OpenAIResponsesModel, request: ModelRequest | None = None) -> list[Any]:
    request = request or ModelRequest([UserMessage("hi")])
    return [e async for e in m.stream(request)]


def calls_of(events: list[Any]) -> list[tuple[str, str, dict[str, Any]]]:
    names: dict[str, str] = {}
    args: dict[str, str] = {}
    order: list[str] = []
    for e in events:
        if isinstance(e, ToolCallStartPart):
            names[e.call_id], args[e.call_id] = e.name, ""
            order.append(e.call_id)
        elif isinstance(e, ToolCallDeltaPart):
            args[e.call_id] += e.delta
    ended = [e.call_id for e in events if isinstance(e, ToolCallEndPart)]
    assert sorted(ended) == sorted(order)
    return [(i, names[i], json.loads(args[i])) for i in order]


@tool
def calculate(expression: str) -> str:
    """Calculate."""
    return {"1+2": "3", "2*3": "6"}.get(expression, "?")


@tool
def read_file(path: str) -> str:
    """Read a file."""
    raise ToolError(f"no file named {path!r} in the sandbox")


# --- one turn -----------------------------------------------------------------------------


async def test_text_streams_with_usage_and_finish(replay: Any) -> None:
    s = Stream().created()
    s.message("msg_1", ["Hel", "lo"])
    s.completed((11, 2), cached=4, reasoning=0).send(replay)
    request = ModelRequest([UserMessage("hi")], instructions="Be brief.")
    events = await collect(model(replay, temperature=0.2), request)
    assert [e.delta for e in events if isinstance(e, TextPart)] == ["Hel", "lo"]
    assert events[-1] == FinishPart("stop", Usage(11, 2, 1, cached_input_tokens=4))
    sent = replay.requests[0]
    assert sent["path"] == "/v1/responses"
    assert sent["headers"]["authorization"] == "Bearer k"
    body = sent["json"]
    assert body["stream"] is True and body["model"] == "gpt-test" and body["temperature"] == 0.2
    assert body["instructions"] == "Be brief."
    assert body["input"] == [{"role": "user", "content": "hi"}]
    assert "tools" not in body and "include" not in body


async def test_one_tool_call_streams_its_argument_deltas(replay: Any) -> None:
    s = Stream().created()
    s.call("fc_1", "call_1", "calculate", ['{"expre', 'ssion": "1', '+2"}'])
    s.completed((20, 9)).send(replay)
    request = ModelRequest(
        [UserMessage("1+2?")],
        tools=[
            {"name": "calculate", "description": "Calculate.", "parameters": {"type": "object"}}
        ],
        tool_choice="calculate",
    )
    events = await collect(model(replay), request)
    deltas = [e.delta for e in events if isinstance(e, ToolCallDeltaPart)]
    assert deltas == ['{"expre', 'ssion": "1', '+2"}']
    assert calls_of(events) == [("call_1", "calculate", {"expression": "1+2"})]
    assert events[-1] == FinishPart("tool-calls", Usage(20, 9, 1))
    body = replay.requests[0]["json"]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "calculate",
            "description": "Calculate.",
            "parameters": {"type": "object"},
            "strict": False,
        }
    ]
    assert body["tool_choice"] == {"type": "function", "name": "calculate"}


async def test_parallel_calls_with_interleaved_deltas(replay: Any) -> None:
    s = Stream().created()
    a = s.call_added("fc_a", "call_a", "read_file")
    b = s.call_added("fc_b", "call_b", "calculate")
    s.call_delta(a, "fc_a", '{"path":')
    s.call_delta(b, "fc_b", '{"expression":')
    s.call_delta(a, "fc_a", ' "a.txt"}')
    s.call_delta(b, "fc_b", ' "2*3"}')
    s.call_done(a, "fc_a", "call_a", "read_file", '{"path": "a.txt"}')
    s.call_done(b, "fc_b", "call_b", "calculate", '{"expression": "2*3"}')
    s.completed((5, 7)).send(replay)
    events = await collect(model(replay))
    assert calls_of(events) == [
        ("call_a", "read_file", {"path": "a.txt"}),
        ("call_b", "calculate", {"expression": "2*3"}),
    ]
    ends = [i for i, e in enumerate(events) if isinstance(e, ToolCallEndPart)]
    assert ends[-1] < len(events) - 1 and isinstance(events[-1], FinishPart)


async def test_a_call_sent_whole_without_deltas_still_streams_its_arguments(
    replay: Any,
) -> None:
    # servers that do not stream arguments in pieces put them on the done item only
    s = Stream().created()
    index = s.call_added("fc_1", "call_1", "calculate")
    s.call_done(index, "fc_1", "call_1", "calculate", '{"expression": "1+2"}')
    s.completed().send(replay)
    events = await collect(model(replay))
    assert calls_of(events) == [("call_1", "calculate", {"expression": "1+2"})]


async def test_reasoning_summaries_stream_as_reasoning_with_reasoning_tokens(
    replay: Any,
) -> None:
    s = Stream().created()
    s.reasoning("rs_1", ["First, add.", "Then answer."])
    s.message("msg_1", ["3"])
    s.completed((30, 50), reasoning=40).send(replay)
    m = model(replay, reasoning={"effort": "low", "summary": "auto"})
    events = await collect(m)
    reasoning = "".join(e.delta for e in events if isinstance(e, ReasoningPart))
    assert reasoning == "First, add.\n\nThen answer."
    finish = events[-1]
    assert isinstance(finish, FinishPart)
    assert finish.usage == Usage(30, 50, 1, reasoning_tokens=40)
    assert replay.requests[0]["json"]["reasoning"] == {"effort": "low", "summary": "auto"}


async def test_an_incomplete_response_finishes_with_length(replay: Any) -> None:
    s = Stream().created()
    s.message("msg_1", ["Once upon"])
    s.add(
        ResponseIncompleteEvent(
            type="response.incomplete",
            sequence_number=s.seq,
            response=s.response("incomplete", incomplete_details={"reason": "max_output_tokens"}),
        )
    )
    s.send(replay)
    events = await collect(model(replay, max_output_tokens=2))
    assert isinstance(events[-1], FinishPart) and events[-1].reason == "length"


# --- an agent's tool loop ------------------------------------------------------------------


async def test_an_agent_calls_a_tool_and_sends_the_result_back(replay: Any) -> None:
    first = Stream().created()
    first.call("fc_1", "call_1", "calculate", ['{"expression":', ' "1+2"}'])
    first.completed((20, 9)).send(replay)
    second = Stream("resp_2").created()
    second.message("msg_2", ["It is 3."])
    second.completed((40, 4)).send(replay)
    agent = Agent(model(replay), [calculate], instructions="Be brief.")
    events = [e async for e in agent.stream("What is 1+2?")]
    results = [e for e in events if isinstance(e, ToolCallResult)]
    assert results[0].content == "3"
    assert agent.mode == "native"
    body = replay.requests[1]["json"]
    assert body["input"][-2:] == [
        dumped(first.output[0]),
        {"type": "function_call_output", "call_id": "call_1", "output": "3"},
    ]
    finished = events[-1]
    assert finished.output == "It is 3."
    assert finished.usage.input_tokens == 60 and finished.usage.output_tokens == 13


async def test_a_failing_tool_reaches_the_model_marked_as_an_error(replay: Any) -> None:
    first = Stream().created()
    first.call("fc_1", "call_1", "read_file", ['{"path": "x"}'])
    first.completed().send(replay)
    second = Stream("resp_2").created()
    second.message("msg_2", ["Sorry."])
    second.completed().send(replay)
    result = await Agent(model(replay), [read_file]).run("read x")
    assert result.output == "Sorry."
    outputs = [
        i for i in replay.requests[1]["json"]["input"] if i.get("type") == "function_call_output"
    ]
    assert outputs == [
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": "Error: no file named 'x' in the sandbox",
        }
    ]


@pytest.mark.parametrize("store", [True, False])
async def test_reasoning_items_go_back_exactly_across_a_tool_loop_and_the_journal(
    replay: Any, store: bool
) -> None:
    encrypted = None if store else "gAAAAB-opaque-reasoning=="
    first = Stream().created()
    reasoning = first.reasoning("rs_1", ["Need the calculator."], encrypted)
    first.message("msg_1", ["Let me check."])
    call = first.call("fc_1", "call_1", "calculate", ['{"expression": ', '"1+2"}'])
    first.completed((20, 30), reasoning=12).send(replay)
    second = Stream("resp_2").created()
    reasoning_2 = second.reasoning("rs_2", ["Got 3."], encrypted and encrypted + "2")
    second.message("msg_2", ["It is 3."])
    second.completed((60, 10), reasoning=5).send(replay)

    settings = {} if store else {"store": False}
    agent = Agent(model(replay, reasoning={"summary": "auto"}, **settings), [calculate])
    result = await agent.run("1+2?")
    assert result.output == "It is 3."
    assert result.usage.reasoning_tokens == 17

    kept = [dumped(reasoning), dumped(first.output[1]), dumped(call)]
    if not store:
        assert kept[0]["encrypted_content"] == encrypted
        for sent in replay.requests:
            assert sent["json"]["store"] is False
            assert sent["json"]["include"] == ["reasoning.encrypted_content"]
    assert replay.requests[1]["json"]["input"] == [
        {"role": "user", "content": "1+2?"},
        *kept,
        {"type": "function_call_output", "call_id": "call_1", "output": "3"},
    ]
    # the run keeps the items on its messages, through the journal's dict and JSON forms
    messages = result.messages
    turn = next(m for m in messages if isinstance(m, AssistantMessage) and m.tool_calls)
    assert turn.provider_blocks == {"openai-responses": kept}
    assert turn.reasoning == "Need the calculator."
    assert [message_from_dict(json.loads(json.dumps(message_to_dict(m)))) for m in messages] == (
        messages
    )
    history = MessageHistory.validate_json(MessageHistory.dump_json(messages))
    assert history == messages
    third = Stream("resp_3").created()
    third.message("msg_3", ["Bye."])
    third.completed().send(replay)
    await agent.run([*history, UserMessage("thanks")])
    again = replay.requests[2]["json"]["input"]
    assert again[1:4] == kept
    assert again[5:7] == [dumped(reasoning_2), dumped(second.output[1])]


async def test_a_history_edited_or_from_another_provider_is_sent_as_new_items(
    replay: Any,
) -> None:
    from callwright.messages import ToolCallPart, ToolResultMessage

    kept = [
        {"id": "rs_1", "type": "reasoning", "summary": []},
        {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "calculate",
         "arguments": '{"expression": "1+2"}', "status": "completed"},
    ]  # fmt: skip
    edited = AssistantMessage(
        "Checking.",
        [ToolCallPart("c1", "calculate", {"expression": "2*3"}), ToolCallPart("c2", "x", {})],
        provider_blocks={"openai-responses": kept, "anthropic": [{"type": "thinking"}]},
    )
    history = [
        UserMessage("go"),
        edited,
        ToolResultMessage("c1", "calculate", "6"),
        ToolResultMessage("c2", "x", "?", is_error=True),
    ]
    Stream().created().completed().send(replay)
    await collect(model(replay), ModelRequest(history))
    assert replay.requests[0]["json"]["input"] == [
        {"role": "user", "content": "go"},
        kept[0],
        {"role": "assistant", "content": "Checking."},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "calculate",
            "arguments": '{"expression": "2*3"}',
            "id": "fc_1",
        },
        {"type": "function_call", "call_id": "c2", "name": "x", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "6"},
        {"type": "function_call_output", "call_id": "c2", "output": "Error: ?"},
    ]


async def test_structured_mode_uses_a_json_schema_text_format(replay: Any) -> None:
    doc = json.dumps(
        {"meta": {}, "calls": [{"_tool": "calculate", "expression": "2*3"}], "output": None}
    )
    first = Stream().created()
    first.message("msg_1", [doc[i : i + 9] for i in range(0, len(doc), 9)])
    first.completed().send(replay)
    second = Stream("resp_2").created()
    second.message("msg_2", ['{"meta": {}, "calls": [], "output": "6"}'])
    second.completed().send(replay)
    result = await Agent(model(replay, mode="structured"), [calculate]).run("2*3?")
    assert result.output == "6"
    body = replay.requests[0]["json"]
    assert body["text"]["format"]["type"] == "json_schema"
    assert body["text"]["format"]["name"] == "solution"
    assert "tools" not in body
    assert "calculate" in body["instructions"]
    follow = replay.requests[1]["json"]["input"]
    assert follow[-1] == {"role": "user", "content": "Tool calculate result: 6"}


# --- files ------------------------------------------------------------------------------


async def test_files_go_before_the_text_as_input_parts(replay: Any) -> None:
    Stream().created().completed().send(replay)
    files = [
        FilePart.from_bytes(b"\x89PNG", "image/png", "a.png"),
        FilePart("image/jpeg", url="https://example.com/b.jpg"),
        FilePart.from_bytes(b"%PDF-1.4", "application/pdf", "c.pdf"),
        FilePart("application/pdf", url="https://example.com/d.pdf"),
        FilePart.from_bytes(b"hello", "text/plain", "e.txt"),
    ]
    await collect(model(replay), ModelRequest([UserMessage("Look.", files=files)]))
    content = replay.requests[0]["json"]["input"][0]["content"]
    assert content == [
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw==", "detail": "auto"},
        {"type": "input_image", "image_url": "https://example.com/b.jpg", "detail": "auto"},
        {
            "type": "input_file",
            "filename": "c.pdf",
            "file_data": "data:application/pdf;base64,JVBERi0xLjQ=",
        },
        {"type": "input_file", "file_url": "https://example.com/d.pdf"},
        {"type": "input_text", "text": "e.txt:\nhello"},
        {"type": "input_text", "text": "Look."},
    ]


async def test_a_file_it_cannot_take_fails_the_step_before_any_request(replay: Any) -> None:
    audio = FilePart.from_bytes(b"RIFF", "audio/wav", "a.wav")
    events = await collect(model(replay), ModelRequest([UserMessage("Hear.", files=[audio])]))
    assert len(events) == 1 and isinstance(events[0], ErrorPart)
    assert events[0].code == "unsupported_file" and "audio/wav" in events[0].message
    assert replay.requests == []


# --- faults -------------------------------------------------------------------------------


async def test_rate_limit_is_retried_after_its_retry_after(replay: Any) -> None:
    # a backoff of its own would wait a minute: the guard fails unless Retry-After is used
    slow = RetryPolicy(max_attempts=2, base_delay=60, max_delay=60)
    replay.reply(429, {"error": {"message": "slow down"}}, {"retry-after": "0.05"})
    s = Stream().created()
    s.message("msg_1", ["ok"])
    s.completed().send(replay)
    m = OpenAIResponsesModel("gpt-test", base_url=replay.url + "/v1", api_key="k", retry=slow)
    events = await asyncio.wait_for(collect(m), 30)
    assert [e.delta for e in events if isinstance(e, TextPart)] == ["ok"]
    assert len(replay.requests) == 2


async def test_a_server_error_is_retried_then_reported(replay: Any) -> None:
    for _ in range(3):
        replay.reply(500, {"error": {"message": "boom"}})
    events = await collect(model(replay))
    assert len(events) == 1 and isinstance(events[0], ErrorPart)
    assert events[0].code == "http_500"
    assert "boom" in events[0].message and "3 attempts" in events[0].message
    assert len(replay.requests) == 3


async def test_a_malformed_stream_ends_the_step_with_an_error(replay: Any) -> None:
    s = Stream().created()
    s.message("msg_1", ["Hel"])
    s.send(replay)
    replay.replies[-1].events.insert(4, ("response.output_text.delta", "{not json"))
    events = await collect(model(replay))
    assert [e.delta for e in events if isinstance(e, TextPart)] == ["Hel"]
    assert isinstance(events[-1], ErrorPart)
    assert not any(isinstance(e, FinishPart) for e in events)
    assert len(replay.requests) == 1  # nothing is retried once the stream has begun


async def test_a_stream_cut_mid_call_fails_the_step_and_runs_no_tool(replay: Any) -> None:
    ran: list[str] = []

    @tool
    def wipe(path: str) -> str:
        """Wipe."""
        ran.append(path)
        return "wiped"

    s = Stream().created()
    index = s.call_added("fc_1", "call_1", "wipe")
    s.call_delta(index, "fc_1", '{"path": "/tm')
    s.send(replay)  # the connection closes here: no done item, no response.completed
    events = await collect(model(replay))
    assert isinstance(events[-1], ErrorPart) and events[-1].code == "incomplete_stream"
    assert not any(isinstance(e, ToolCallEndPart | FinishPart) for e in events)

    again = Stream().created()
    index = again.call_added("fc_1", "call_1", "wipe")
    again.call_delta(index, "fc_1", '{"path": "/tm')
    again.send(replay)
    with pytest.raises(RunFailed) as failed:
        await Agent(model(replay), [wipe]).run("clean up")
    assert failed.value.error.code == "incomplete_stream"
    assert ran == []


async def test_a_failed_response_event_is_the_steps_error(replay: Any) -> None:
    s = Stream().created()
    s.add(
        ResponseFailedEvent(
            type="response.failed",
            sequence_number=s.seq,
            response=s.response(
                "failed", error={"code": "server_error", "message": "The model crashed."}
            ),
        )
    )
    s.send(replay)
    events = await collect(model(replay))
    assert events == [
        ErrorPart("the model provider failed the response: The model crashed.", "server_error")
    ]


async def test_an_error_event_mid_stream_is_the_steps_error(replay: Any) -> None:
    s = Stream().created()
    s.message("msg_1", ["Hi"])
    s.add(
        ResponseErrorEvent(
            type="error", sequence_number=s.seq, code="rate_limit_exceeded", message="Slow down."
        )
    )
    s.send(replay)
    events = await collect(model(replay))
    assert isinstance(events[-1], ErrorPart)
    assert events[-1].code == "rate_limit_exceeded" and "Slow down." in events[-1].message


async def test_reasoning_reaches_the_runs_event_stream(replay: Any) -> None:
    s = Stream().created()
    s.reasoning("rs_1", ["Simple."])
    s.message("msg_1", ["Hi."])
    s.completed().send(replay)
    events = [e async for e in Agent(model(replay)).stream("hi")]
    kinds = [e.type for e in events if e.type.startswith(("reasoning", "text"))]
    assert kinds[:4] == ["reasoning-start", "reasoning-delta", "reasoning-delta", "reasoning-end"]
    shown = "".join(e.delta for e in events if isinstance(e, ReasoningDelta))
    assert shown == "Simple."


async def test_a_structured_answer_comes_through_the_output_tool(replay: Any) -> None:
    from callwright.compose import OUTPUT_TOOL

    class Sum(BaseModel):
        total: int

    s = Stream().created()
    s.call("fc_1", "call_1", OUTPUT_TOOL, ['{"total"', ": 3}"])
    s.completed().send(replay)
    result = await Agent(model(replay), output_type=Sum).run("1+2?")
    assert result.output == Sum(total=3)
    tools = replay.requests[0]["json"]["tools"]
    assert [t["name"] for t in tools] == [OUTPUT_TOOL]
    assert tools[0]["parameters"]["properties"]["total"]["type"] == "integer"


async def test_encrypted_reasoning_survives_the_run_journal(replay: Any, tmp_path: Any) -> None:
    from callwright import start_journaled
    from callwright.store import open_journal

    first = Stream().created()
    reasoning = first.reasoning("rs_1", [], "gAAAAB-sealed==")
    call = first.call("fc_1", "call_1", "calculate", ['{"expression": "1+2"}'])
    first.completed().send(replay)
    second = Stream("resp_2").created()
    second.message("msg_2", ["3."])
    second.completed().send(replay)
    third = Stream("resp_3").created()
    third.message("msg_3", ["Bye."])
    third.completed().send(replay)
    agent = Agent(model(replay, store=False), [calculate])
    journal = open_journal(str(tmp_path / "runs.db"))
    try:
        # the second run starts from the journal's history, not from a copy of its own
        for run_id, prompt in (("r1", "1+2?"), ("r2", "bye")):
            run, recorder = start_journaled(journal, agent, "t1", run_id, [UserMessage(prompt)], [])
            async for event in run.events():
                recorder.record(event, repr(event).encode())
    finally:
        journal.close()
    again = replay.requests[2]["json"]["input"]
    assert again[1:3] == [dumped(reasoning), dumped(call)]
    assert again[1]["encrypted_content"] == "gAAAAB-sealed=="


@pytest.mark.parametrize(
    ("path", "payload", "reasoning_type", "text_type"),
    [
        (
            "/agui",
            {
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "u", "role": "user", "content": "hi"}],
            },
            "REASONING_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
        ),
        (
            "/api/chat",
            {
                "id": "c",
                "messages": [
                    {"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
                ],
            },
            "reasoning-delta",
            "text-delta",
        ),
    ],
)
def test_reasoning_summaries_reach_both_wires_through_a_server(
    replay: Any, path: str, payload: dict[str, Any], reasoning_type: str, text_type: str
) -> None:
    import httpx

    from callwright.server import create_app
    from live_server import Server

    s = Stream().created()
    s.reasoning("rs_1", ["Greet back."], "gAAAAB-never-shown==")
    s.message("msg_1", ["Hi."])
    s.completed().send(replay)
    agent = Agent(model(replay, store=False, reasoning={"summary": "auto"}))
    with Server(create_app(agent)) as server:
        body = httpx.post(server.url + path, json=payload, timeout=30).text
    frames = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]
    reasoning = "".join(f["delta"] for f in frames if f["type"] == reasoning_type)
    text = "".join(f["delta"] for f in frames if f["type"] == text_type)
    assert (reasoning, text) == ("Greet back.", "Hi.")
    assert "gAAAAB" not in body  # encrypted reasoning is carried, never shown


async def test_settings_map_to_responses_parameters(replay: Any) -> None:
    s = Stream().created()
    s.message("msg_1", ["ok"])
    s.completed((5, 1)).send(replay)
    settings = ModelSettings(
        temperature=0.3,
        max_tokens=50,
        top_p=0.9,
        parallel_tool_calls=False,
        reasoning_effort="high",
        extra={"store": False},
    )
    tools = [{"name": "calculate", "description": "", "parameters": {"type": "object"}}]
    request = ModelRequest([UserMessage("hi")], tools=tools, settings=settings)
    m = model(replay, reasoning={"summary": "auto"}, temperature=1.0)
    await collect(m, request)
    body = replay.requests[0]["json"]
    assert body["temperature"] == 0.3 and body["top_p"] == 0.9
    assert body["max_output_tokens"] == 50 and body["parallel_tool_calls"] is False
    assert body["reasoning"] == {"summary": "auto", "effort": "high"}
    assert "reasoning_effort" not in body
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]


async def test_parallel_tool_calls_is_left_out_without_tools(replay: Any) -> None:
    s = Stream().created()
    s.message("msg_1", ["ok"])
    s.completed((5, 1)).send(replay)
    request = ModelRequest([UserMessage("hi")], settings=ModelSettings(parallel_tool_calls=True))
    await collect(model(replay), request)
    assert "parallel_tool_calls" not in replay.requests[0]["json"]


async def test_extras_the_sdk_does_not_name_still_reach_the_request_body(replay: Any) -> None:
    # a provider's own field or one newer than the SDK: create() would refuse it by name
    s = Stream().created()
    s.message("msg_1", ["ok"])
    s.completed((5, 1)).send(replay)
    extra = {"seed": 7, "provider_field": {"a": [1]}, "service_tier": "flex"}
    await collect(
        model(replay), ModelRequest([UserMessage("hi")], settings=ModelSettings(extra=extra))
    )
    body = replay.requests[0]["json"]
    assert body["seed"] == 7 and body["provider_field"] == {"a": [1]}
    assert body["service_tier"] == "flex" and body["model"] == "gpt-test"
