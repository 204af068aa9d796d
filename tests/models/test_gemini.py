"""The Gemini adapter, through the official google-genai SDK over real HTTP to a replay
server speaking the Gemini API's wire format: ``POST .../models/{model}:streamGenerateContent
?alt=sse`` answered with SSE ``data:`` lines of ``GenerateContentResponse`` JSON, built from
the SDK's own types and dumped as the API sends them (camelCase, standard base64)."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from google.genai import types

from callwright import (
    Agent,
    ConfigurationError,
    FilePart,
    MessageHistory,
    ModelSettings,
    ToolError,
    tool,
)
from callwright.events import ToolCallResult
from callwright.messages import (
    AssistantMessage,
    ToolResultMessage,
    UserMessage,
    message_from_dict,
    message_to_dict,
)
from callwright.models import _retry, resolve_model
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
from callwright.models.gemini import GeminiModel
from models._gemini import (
    MODEL,
    SIG_1,
    SIG_2,
    SIG_TEXT,
    answer,
    call,
    chunk,
    sent,
    signature_bytes,
    text,
    thought,
    usage,
)

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=30.0)


def model(replay: Any, **kw: Any) -> GeminiModel:
    return GeminiModel(MODEL, api_key="k", base_url=replay.url, retry=FAST, **kw)


async def collect(m: GeminiModel, request: ModelRequest | None = None) -> list[Any]:
    return [e async for e in m.stream(request or ModelRequest([UserMessage("hi")]))]


def test_the_signatures_have_characters_the_alphabets_write_differently() -> None:
    assert all(set(s) & {"+", "/"} for s in (SIG_1, SIG_2, SIG_TEXT))


async def test_thoughts_text_and_usage_stream(replay: Any) -> None:
    replay.sse(
        [
            chunk(thought("The user greets; ")),
            chunk(thought("answer kindly.")),
            chunk(text("Hel")),
            chunk(text("lo!"), finish="STOP", tokens=usage(12, 5, thoughts=30, cached=8)),
        ],
        done=False,
    )
    request = ModelRequest([UserMessage("hi")], instructions="Be brief.")
    events = await collect(model(replay, include_thoughts=True, temperature=0.2), request)
    assert events == [
        ReasoningPart("The user greets; "),
        ReasoningPart("answer kindly."),
        TextPart("Hel"),
        TextPart("lo!"),
        FinishPart("stop", Usage(12, 35, 1, cached_input_tokens=8, reasoning_tokens=30)),
    ]
    request_sent = replay.requests[0]
    body = sent(replay, 0)
    # the API version in the path is the SDK's choice (v1beta, v1 in its later releases)
    assert re.fullmatch(
        rf"/v1(beta)?/models/{MODEL}:streamGenerateContent\?alt=sse", request_sent["path"]
    )
    assert request_sent["headers"]["x-goog-api-key"] == "k"
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert body["generationConfig"]["temperature"] == 0.2
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True}
    assert "tools" not in body


async def test_one_call_is_a_start_one_delta_and_an_end(replay: Any) -> None:
    replay.sse(
        [
            chunk(call("read_file", {"path": "a.txt"}, id="fc_1")),
            chunk(finish="STOP", tokens=usage(20, 7)),
        ],
        done=False,
    )
    events = await collect(model(replay))
    assert events == [
        ToolCallStartPart("fc_1", "read_file"),
        ToolCallDeltaPart("fc_1", '{"path": "a.txt"}'),
        ToolCallEndPart("fc_1"),
        FinishPart("tool-calls", Usage(20, 7, 1)),
    ]


async def test_parallel_calls_without_ids_get_distinct_ones(replay: Any) -> None:
    replay.sse(
        [
            chunk(
                call("read_file", {"path": "a.txt"}, signature=SIG_1),
                call("list_files", {}),
                finish="STOP",
                tokens=usage(20, 9),
            )
        ],
        done=False,
    )
    events = await collect(model(replay))
    starts = [e for e in events if isinstance(e, ToolCallStartPart)]
    assert [s.name for s in starts] == ["read_file", "list_files"]
    first, second = (s.call_id for s in starts)
    assert first != second
    assert [e for e in events if isinstance(e, ToolCallDeltaPart)] == [
        ToolCallDeltaPart(first, '{"path": "a.txt"}'),
        ToolCallDeltaPart(second, "{}"),
    ]
    finish = events[-1]
    assert isinstance(finish, FinishPart) and finish.reason == "tool-calls"
    assert finish.provider_blocks == {
        "gemini": [{"part": "function_call", "id": first, "thought_signature": SIG_1}]
    }


async def test_tools_and_tool_choice_in_gemini_shape(replay: Any) -> None:
    definition = {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    answer(replay, text("ok"))
    answer(replay, text("ok"))
    m = model(replay)
    await collect(m, ModelRequest([UserMessage("hi")], tools=[definition]))
    await collect(m, ModelRequest([UserMessage("hi")], tools=[definition], tool_choice="read_file"))
    first, second = sent(replay, 0), sent(replay, 1)
    assert first["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parametersJsonSchema": definition["parameters"],
                }
            ]
        }
    ]
    assert first["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    assert second["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["read_file"]}
    }


async def test_a_failed_call_goes_back_as_a_function_response_error(replay: Any) -> None:
    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        raise ToolError(f"no file named {path!r} in the sandbox")

    replay.sse([chunk(call("read_file", {"path": "x"}, id="fc_1"), finish="STOP")], done=False)
    answer(replay, text("There is no such file."))
    result = await Agent(model(replay), [read_file]).run("read x")
    assert result.output == "There is no such file."
    assert sent(replay, 1)["contents"][-1] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": "fc_1",
                    "name": "read_file",
                    "response": {"error": "no file named 'x' in the sandbox"},
                }
            }
        ],
    }


async def test_parallel_results_travel_in_one_user_turn(replay: Any) -> None:
    @tool
    def weather(city: str) -> str:
        """The weather."""
        return f"sunny in {city}"

    replay.sse(
        [
            chunk(
                call("weather", {"city": "Oslo"}, signature=SIG_1),
                call("weather", {"city": "Rome"}),
                finish="STOP",
            )
        ],
        done=False,
    )
    answer(replay, text("Sunny in both."))
    result = await Agent(model(replay), [weather]).run("Oslo and Rome?")
    contents = sent(replay, 1)["contents"]
    ids = [c.id for m in result.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert [p["functionCall"]["id"] for p in contents[1]["parts"]] == ids
    assert signature_bytes(contents[1]["parts"][0]["thoughtSignature"]) == signature_bytes(SIG_1)
    assert "thoughtSignature" not in contents[1]["parts"][1]
    assert contents[2]["parts"] == [
        {
            "functionResponse": {
                "id": ids[0],
                "name": "weather",
                "response": {"output": "sunny in Oslo"},
            }
        },
        {
            "functionResponse": {
                "id": ids[1],
                "name": "weather",
                "response": {"output": "sunny in Rome"},
            }
        },
    ]


async def test_signatures_go_back_exactly_through_a_multi_turn_tool_loop(replay: Any) -> None:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return {"a": "b", "b": "done"}[key]

    # step 1: a thought, text and a signed call; step 2: another signed call (sequential
    # calls each carry their own); step 3: the answer, whose signature ends the stream
    replay.sse(
        [
            chunk(thought("Look up a first.")),
            chunk(text("Looking up a.")),
            chunk(call("lookup", {"key": "a"}, id="fc_a", signature=SIG_1), finish="STOP"),
        ],
        done=False,
    )
    replay.sse(
        [chunk(call("lookup", {"key": "b"}, id="fc_b", signature=SIG_2), finish="STOP")],
        done=False,
    )
    replay.sse([chunk(text("It is done.")), chunk(text("", SIG_TEXT), finish="STOP")], done=False)
    agent = Agent(model(replay, include_thoughts=True), [lookup])
    result = await agent.run("Follow the keys from a.")
    assert result.output == "It is done."
    assert [r.call_id for r in result.messages if isinstance(r, ToolResultMessage)] == [
        "fc_a",
        "fc_b",
    ]

    second = sent(replay, 1)["contents"]
    assert second[1]["role"] == "model"
    assert second[1]["parts"][0] == {"text": "Looking up a."}
    sent_call = second[1]["parts"][1]
    assert sent_call["functionCall"] == {"id": "fc_a", "name": "lookup", "args": {"key": "a"}}
    assert signature_bytes(sent_call["thoughtSignature"]) == signature_bytes(SIG_1)
    # the same base64 text but for the alphabet: the SDK writes bytes URL-safe
    assert sent_call["thoughtSignature"] == SIG_1.replace("+", "-").replace("/", "_")
    assert second[2]["parts"][0]["functionResponse"]["response"] == {"output": "b"}

    third = sent(replay, 2)["contents"]
    signed = [p for c in third for p in c["parts"] if "thoughtSignature" in p]
    assert [(p["functionCall"]["id"], signature_bytes(p["thoughtSignature"])) for p in signed] == [
        ("fc_a", signature_bytes(SIG_1)),
        ("fc_b", signature_bytes(SIG_2)),
    ]

    # kept through the journal's form and MessageHistory, and sent again in a later run
    last = result.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.provider_blocks == {"gemini": [{"part": "text", "thought_signature": SIG_TEXT}]}
    journal = [message_from_dict(message_to_dict(m)) for m in result.messages]
    history = MessageHistory.validate_json(MessageHistory.dump_json(result.messages))
    assert journal == history == result.messages
    answer(replay, text("You are welcome."))
    await agent.run([*history, UserMessage("thanks")])
    fourth = sent(replay, 3)["contents"]
    assert [c["role"] for c in fourth] == [
        "user",
        "model",
        "user",
        "model",
        "user",
        "model",
        "user",
    ]
    resent = [
        (p.get("functionCall", {}).get("id"), signature_bytes(p["thoughtSignature"]))
        for c in fourth
        for p in c["parts"]
        if "thoughtSignature" in p
    ]
    assert resent == [
        ("fc_a", signature_bytes(SIG_1)),
        ("fc_b", signature_bytes(SIG_2)),
        (None, signature_bytes(SIG_TEXT)),
    ]
    assert fourth[5]["parts"] == [
        {"text": "It is done.", "thoughtSignature": fourth[5]["parts"][0]["thoughtSignature"]}
    ]


async def test_a_history_gemini_did_not_make_gets_the_placeholder_signature(
    replay: Any,
) -> None:
    from callwright.messages import ToolCallPart

    elsewhere = AssistantMessage(
        "", [ToolCallPart("c1", "lookup", {"key": "a"}), ToolCallPart("c2", "lookup", {})]
    )
    unsigned = AssistantMessage(
        "", [ToolCallPart("c3", "lookup", {})], provider_blocks={"gemini": []}
    )
    history = [
        UserMessage("go"),
        elsewhere,
        ToolResultMessage("c1", "lookup", "b"),
        ToolResultMessage("c2", "lookup", "?"),
        unsigned,
        ToolResultMessage("c3", "lookup", "?"),
    ]
    answer(replay, text("ok"))
    await collect(model(replay), ModelRequest(history))
    contents = sent(replay, 0)["contents"]
    assert contents[1]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator"
    assert "thoughtSignature" not in contents[1]["parts"][1]
    assert "thoughtSignature" not in contents[3]["parts"][0]


async def test_other_adapters_ignore_gemini_signatures() -> None:
    from callwright.models.openai import chat_messages

    message = AssistantMessage(
        "Hi.", provider_blocks={"gemini": [{"part": "text", "thought_signature": SIG_TEXT}]}
    )
    assert chat_messages([message], None) == [{"role": "assistant", "content": "Hi."}]


PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
    "2mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PDF = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()
NOTES = base64.b64encode("Meeting at 10 — bring the slides.".encode()).decode()


async def test_files_go_before_the_text_as_inline_data_and_file_data(replay: Any) -> None:
    answer(replay, text("A red dot."))
    files = [
        FilePart("image/png", data=PNG, filename="dot.png"),
        FilePart("application/pdf", data=PDF, filename="paper.pdf"),
        FilePart("text/plain", data=NOTES, filename="notes.txt"),
        FilePart("image/jpeg", url="https://example.com/cat.jpg"),
    ]
    events = await collect(model(replay), ModelRequest([UserMessage("What is this?", files=files)]))
    assert [e.delta for e in events if isinstance(e, TextPart)] == ["A red dot."]
    parts = sent(replay, 0)["contents"][0]["parts"]
    assert [sorted(p) for p in parts] == [
        ["inlineData"],
        ["inlineData"],
        ["text"],
        ["fileData"],
        ["text"],
    ]
    assert parts[0]["inlineData"]["mimeType"] == "image/png"
    assert base64.urlsafe_b64decode(parts[0]["inlineData"]["data"]) == base64.b64decode(PNG)
    assert parts[1]["inlineData"]["mimeType"] == "application/pdf"
    assert base64.urlsafe_b64decode(parts[1]["inlineData"]["data"]) == base64.b64decode(PDF)
    assert parts[2] == {"text": "notes.txt:\nMeeting at 10 — bring the slides."}
    assert parts[3] == {
        "fileData": {"fileUri": "https://example.com/cat.jpg", "mimeType": "image/jpeg"}
    }
    assert parts[4] == {"text": "What is this?"}


async def test_a_file_gemini_cannot_take_ends_the_step_saying_so(replay: Any) -> None:
    archive = FilePart("application/zip", data=base64.b64encode(b"PK").decode(), filename="a.zip")
    events = await collect(model(replay), ModelRequest([UserMessage("open", files=[archive])]))
    assert len(events) == 1 and isinstance(events[0], ErrorPart)
    assert events[0].code == "unsupported_file"
    assert "application/zip" in events[0].message
    assert replay.requests == []


async def test_429_waits_the_retry_after_then_succeeds(replay: Any, monkeypatch: Any) -> None:
    waits: list[float] = []

    async def sleep(delay: float, cancel: Any) -> bool:
        waits.append(delay)
        return False

    monkeypatch.setattr(_retry, "sleep_unless_cancelled", sleep)
    error = {
        "error": {"code": 429, "message": "Resource exhausted.", "status": "RESOURCE_EXHAUSTED"}
    }
    replay.reply(429, error, {"retry-after": "7"})
    answer(replay, text("ok"))
    events = await collect(model(replay))
    assert waits == [7.0]
    assert [e.delta for e in events if isinstance(e, TextPart)] == ["ok"]
    assert len(replay.requests) == 2


async def test_500_is_retried_and_then_reported(replay: Any) -> None:
    error = {"error": {"code": 500, "message": "Internal error.", "status": "INTERNAL"}}
    replay.reply(500, error)
    answer(replay, text("ok"))
    assert [e.delta for e in await collect(model(replay)) if isinstance(e, TextPart)] == ["ok"]
    for _ in range(FAST.max_attempts):
        replay.reply(500, error)
    events = await collect(model(replay))
    assert events == [
        ErrorPart(
            "the model provider answered 500: Internal error. (gave up after 3 attempts)",
            "http_500",
        )
    ]
    assert len(replay.requests) == 2 + FAST.max_attempts


async def test_a_bad_request_is_clear_and_not_retried(replay: Any) -> None:
    error = {"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}}
    replay.reply(400, error)
    events = await collect(model(replay))
    assert events == [ErrorPart("the model provider answered 400: API key not valid.", "http_400")]
    assert len(replay.requests) == 1


async def test_a_malformed_stream_ends_the_step(replay: Any) -> None:
    replay.sse(['{"candidates": [oops'], done=False)
    events = await collect(model(replay))
    assert events == [ErrorPart("the model provider sent a stream that is not JSON", "model_error")]
    assert len(replay.requests) == 1


async def test_a_stream_cut_mid_call_ends_the_step_without_the_call(replay: Any) -> None:
    whole = chunk(call("read_file", {"path": "a.txt"}, id="fc_1"), finish="STOP")
    cut = json.dumps(whole)[:60]
    replay.sse([chunk(text("Reading.")), cut], done=False)
    events = await collect(model(replay))
    assert events[0] == TextPart("Reading.")
    assert events[1:] == [
        ErrorPart("the model provider sent a stream that is not JSON", "model_error")
    ]
    assert len(replay.requests) == 1  # nothing is retried once the stream has begun


async def test_a_stream_that_stops_between_chunks_is_an_error(replay: Any) -> None:
    replay.sse([chunk(text("Half an answer"))], done=False)
    events = await collect(model(replay))
    assert events == [
        TextPart("Half an answer"),
        ErrorPart("the Gemini stream ended before its last chunk", "model_error"),
    ]


async def test_an_error_in_the_stream_ends_the_step(replay: Any) -> None:
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    replay.sse([chunk(text("Hi")), error], done=False)
    events = await collect(model(replay))
    assert events[0] == TextPart("Hi")
    assert events[1] == ErrorPart(
        "the model provider answered 503: The model is overloaded.", "http_503"
    )
    assert len(replay.requests) == 1


async def test_a_blocked_prompt_finishes_as_content_filter(replay: Any) -> None:
    blocked = types.GenerateContentResponse(
        prompt_feedback=types.GenerateContentResponsePromptFeedback(
            block_reason=types.BlockedReason.SAFETY
        ),
        usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=4),
    )
    replay.sse([blocked.model_dump(mode="json", by_alias=True, exclude_none=True)], done=False)
    events = await collect(model(replay))
    assert events == [FinishPart("content-filter", Usage(4, 0, 1))]


async def test_an_answer_cut_at_max_tokens_finishes_as_length(replay: Any) -> None:
    answer(replay, text("A long"), finish="MAX_TOKENS")
    events = await collect(model(replay))
    assert events[-1] == FinishPart("length", Usage(10, 2, 1))


GEMINI_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI")


async def test_a_missing_key_names_both_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*GEMINI_ENV, "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(name, raising=False)
    m = GeminiModel(MODEL)
    reason = m.unconfigured()
    assert reason is not None and "GEMINI_API_KEY" in reason and "GOOGLE_API_KEY" in reason
    events = await collect(m)
    assert events == [ErrorPart(reason, "configuration_error")]
    monkeypatch.setenv("GOOGLE_API_KEY", "from-env")
    assert m.unconfigured() is None


async def test_the_key_comes_from_gemini_api_key(
    replay: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    answer(replay, text("ok"))
    await collect(GeminiModel(MODEL, base_url=replay.url, retry=FAST))
    assert replay.requests[0]["headers"]["x-goog-api-key"] == "gemini-key"


def test_vertex_ai_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    m = GeminiModel(MODEL)
    assert m.vertexai and m.unconfigured() is None


def test_resolve_model_and_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    m = resolve_model("gemini:gemini-3-pro-preview")
    assert isinstance(m, GeminiModel) and m.name == "gemini:gemini-3-pro-preview"
    assert m.model == "gemini-3-pro-preview" and m.modes == ("native",)
    from callwright import ConfigurationError

    with pytest.raises(ConfigurationError, match="temprature"):
        GeminiModel(MODEL, temprature=0.5)


async def test_an_agent_round_trip_reports_the_result_and_usage(replay: Any) -> None:
    @tool
    def calculate(expression: str) -> str:
        """Calculate."""
        return "4"

    replay.sse(
        [chunk(call("calculate", {"expression": "2+2"}), finish="STOP", tokens=usage(20, 9))],
        done=False,
    )
    replay.sse([chunk(text("It is 4."), finish="STOP", tokens=usage(40, 4, cached=16))], done=False)
    events = [e async for e in Agent(model(replay), [calculate]).stream("2+2?")]
    assert [e.content for e in events if isinstance(e, ToolCallResult)] == ["4"]
    finished = events[-1]
    assert finished.output == "It is 4."
    assert finished.usage.input_tokens == 60 and finished.usage.output_tokens == 13
    assert finished.usage.cached_input_tokens == 16


def test_without_the_sdk_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "google.genai", None)  # as if it were not installed
    with pytest.raises(
        ImportError, match=r"google-genai package: pip install 'callwright\[gemini\]'"
    ):
        GeminiModel(MODEL, api_key="k")


async def test_cancelling_stops_a_slow_stream(replay: Any) -> None:
    import asyncio

    from callwright import CancelToken

    replay.sse([chunk(text(f"{i} ")) for i in range(50)], delay=0.1, done=False)
    cancel = CancelToken()
    seen: list[Any] = []

    async def consume() -> None:
        async for event in model(replay).stream(ModelRequest([UserMessage("hi")], cancel=cancel)):
            seen.append(event)
            cancel.cancel("user")

    await asyncio.wait_for(consume(), 30)
    assert seen == [TextPart("0 ")]


async def test_vertex_ai_express_mode_through_the_sdk(
    replay: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    replay.sse([chunk(call("lookup", {"key": "a"}, signature=SIG_1), finish="STOP")], done=False)
    m = GeminiModel(MODEL, api_key="vertex-key", base_url=replay.url, retry=FAST)
    events = await collect(m)
    assert m.vertexai
    assert [type(e) for e in events] == [
        ToolCallStartPart,
        ToolCallDeltaPart,
        ToolCallEndPart,
        FinishPart,
    ]
    finish = events[-1]
    assert finish.provider_blocks["gemini"][0]["thought_signature"] == SIG_1
    request = replay.requests[0]
    assert request["path"].endswith(f"/models/{MODEL}:streamGenerateContent?alt=sse")
    assert "publishers/google" in request["path"]
    assert request["headers"]["x-goog-api-key"] == "vertex-key"


async def test_settings_map_to_the_generation_config(replay: Any) -> None:
    answer(replay, text("ok"))
    settings = ModelSettings(
        temperature=0.3, max_tokens=50, top_p=0.9, reasoning_effort="low", extra={"seed": 7}
    )
    m = model(replay, temperature=1.0, include_thoughts=True)
    await collect(m, ModelRequest([UserMessage("hi")], settings=settings))
    config = sent(replay, 0)["generationConfig"]
    assert config["temperature"] == 0.3 and config["topP"] == 0.9 and config["seed"] == 7
    assert config["maxOutputTokens"] == 50
    assert config["thinkingConfig"] == {"includeThoughts": True, "thinkingLevel": "LOW"}


async def test_gemini_refuses_what_it_cannot_take_by_name(replay: Any) -> None:
    m = model(replay)
    for settings, named in [
        (ModelSettings(parallel_tool_calls=False), "parallel_tool_calls"),
        (ModelSettings(reasoning_effort="none"), "reasoning_effort='none'"),
        (ModelSettings(extra={"no_such_field": 1}), "no_such_field"),
    ]:
        events = await collect(m, ModelRequest([UserMessage("hi")], settings=settings))
        assert len(events) == 1 and isinstance(events[0], ErrorPart)
        assert events[0].code == "configuration_error" and named in events[0].message
    assert replay.requests == []
    with pytest.raises(ConfigurationError, match="parallel_tool_calls"):
        Agent(m, settings=ModelSettings(parallel_tool_calls=True))
