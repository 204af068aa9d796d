"""Files and images on user messages, as each model adapter sends them: through the real
openai and anthropic SDKs over real HTTP to a replay server, asserting on the exact request
body; the embedded model's clear refusal; the part's JSON round trip."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from callwright import Agent, FilePart, MessageHistory
from callwright.events import RunError
from callwright.messages import (
    AssistantMessage,
    Message,
    ToolResultMessage,
    UserMessage,
    message_from_dict,
    message_to_dict,
)
from callwright.models._retry import RetryPolicy
from callwright.models.anthropic import AnthropicModel
from callwright.models.base import ErrorPart, ModelRequest, TextPart
from callwright.models.local import LocalModel
from callwright.models.openai import OpenAIModel

FAST = RetryPolicy(max_attempts=2, base_delay=0.01)
# a real 1x1 PNG
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
    "2mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PDF = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()
NOTES = base64.b64encode("Meeting at 10 — bring the slides.".encode()).decode()

IMAGE = FilePart("image/png", data=PNG, filename="dot.png")
HOSTED = FilePart("image/jpeg", url="https://example.com/cat.jpg")
PAPER = FilePart("application/pdf", data=PDF, filename="paper.pdf")
HOSTED_PDF = FilePart("application/pdf", url="https://example.com/paper.pdf")
TEXT = FilePart("text/plain", data=NOTES, filename="notes.txt")


def openai_answer(replay: Any, text: str = "A red dot.") -> None:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    replay.sse(
        [
            {**chunk, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
    )


def anthropic_answer(replay: Any, text: str = "A red dot.") -> None:
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 0},
    }
    events = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 3},
        },
        {"type": "message_stop"},
    ]
    replay.sse(events, named=True, done=False)


def openai(replay: Any, **kw: Any) -> OpenAIModel:
    return OpenAIModel("m", base_url=replay.url + "/v1", api_key="k", retry=FAST, **kw)


def anthropic(replay: Any) -> AnthropicModel:
    return AnthropicModel("claude-x", api_key="k", base_url=replay.url, retry=FAST)


async def collect(model: Any, *messages: Any) -> list[Any]:
    return [e async for e in model.stream(ModelRequest(list(messages)))]


# --- OpenAI-compatible ----------------------------------------------------------------


async def test_openai_gets_image_pdf_and_text_parts_before_the_text(replay: Any) -> None:
    openai_answer(replay)
    message = UserMessage("What are these?", files=[IMAGE, HOSTED, PAPER, TEXT])
    events = await collect(openai(replay), message)
    assert [e.delta for e in events if isinstance(e, TextPart)] == ["A red dot."]
    sent = replay.requests[0]["json"]["messages"]
    assert sent == [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
                {
                    "type": "file",
                    "file": {
                        "filename": "paper.pdf",
                        "file_data": f"data:application/pdf;base64,{PDF}",
                    },
                },
                {"type": "text", "text": "notes.txt:\nMeeting at 10 — bring the slides."},
                {"type": "text", "text": "What are these?"},
            ],
        }
    ]


async def test_openai_text_only_messages_stay_plain_strings(replay: Any) -> None:
    openai_answer(replay)
    await collect(openai(replay), UserMessage("hi"))
    assert replay.requests[0]["json"]["messages"] == [{"role": "user", "content": "hi"}]


async def test_openai_structured_mode_sends_the_image_in_its_user_turn(replay: Any) -> None:
    openai_answer(replay, '{"meta": {}, "calls": [], "output": "A dot."}')
    history: list[Message] = [
        UserMessage("first"),
        AssistantMessage("", []),
        UserMessage("What is this?", files=[IMAGE]),
    ]
    schema = {"type": "object", "properties": {"meta": {}, "calls": {}, "output": {}}}
    request = ModelRequest(history, mode="structured", solution_schema=schema)
    _ = [e async for e in openai(replay, mode="structured").stream(request)]
    body = replay.requests[0]["json"]
    assert "response_format" in body
    turns = body["messages"][1:]  # after the solution-schema system prompt
    assert turns[0] == {"role": "user", "content": "first"}
    assert turns[-1] == {
        "role": "user",
        "content": [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            {"type": "text", "text": "What is this?"},
        ],
    }


async def test_openai_cannot_take_a_pdf_by_url_and_says_so(replay: Any) -> None:
    events = await collect(openai(replay), UserMessage("Read this", files=[HOSTED_PDF]))
    assert len(events) == 1 and isinstance(events[0], ErrorPart)
    assert events[0].code == "unsupported_file"
    assert "application/pdf by URL" in events[0].message
    assert replay.requests == []  # nothing was sent without the file


# --- Anthropic --------------------------------------------------------------------------


async def test_anthropic_gets_image_and_document_blocks(replay: Any) -> None:
    anthropic_answer(replay)
    message = UserMessage("What are these?", files=[IMAGE, HOSTED, PAPER, HOSTED_PDF, TEXT])
    events = await collect(anthropic(replay), message)
    assert [e.delta for e in events if isinstance(e, TextPart)] == ["A red dot."]
    assert replay.requests[0]["json"]["messages"] == [
        {
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                },
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                    "title": "paper.pdf",
                },
                {
                    "type": "document",
                    "source": {"type": "url", "url": "https://example.com/paper.pdf"},
                },
                {
                    "type": "document",
                    "source": {
                        "type": "text",
                        "media_type": "text/plain",
                        "data": "Meeting at 10 — bring the slides.",
                    },
                    "title": "notes.txt",
                },
                {"type": "text", "text": "What are these?"},
            ],
        }
    ]


async def test_anthropic_a_file_alone_sends_no_empty_text_block(replay: Any) -> None:
    anthropic_answer(replay)
    await collect(anthropic(replay), UserMessage("", files=[IMAGE]))
    content = replay.requests[0]["json"]["messages"][0]["content"]
    assert [block["type"] for block in content] == ["image"]


async def test_anthropic_cannot_take_an_svg_and_the_run_says_so(replay: Any) -> None:
    svg = FilePart("image/svg+xml", data=base64.b64encode(b"<svg/>").decode())
    agent = Agent(anthropic(replay))
    events = [e async for e in agent.stream([UserMessage("Draw it", files=[svg])])]
    errors = [e for e in events if isinstance(e, RunError)]
    assert errors and errors[0].code == "unsupported_file"
    assert "image/svg+xml" in errors[0].message
    assert replay.requests == []


async def test_an_agent_run_sends_the_files_of_the_whole_history(replay: Any) -> None:
    anthropic_answer(replay, "A dot.")
    anthropic_answer(replay, "Still a dot.")
    agent = Agent(anthropic(replay))
    first = await agent.run([UserMessage("What is this?", files=[IMAGE])])
    again = await agent.run([*first.messages, UserMessage("And now?")])
    assert again.output == "Still a dot."
    second = replay.requests[1]["json"]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[0]["content"][0]["type"] == "image"


# --- the embedded model -------------------------------------------------------------------


async def test_the_embedded_model_refuses_files_clearly_before_loading_anything() -> None:
    model = LocalModel("/nonexistent/model.gguf")  # never opened: the refusal comes first
    events = await collect(model, UserMessage("What is this?", files=[IMAGE]))
    assert len(events) == 1 and isinstance(events[0], ErrorPart)
    assert events[0].code == "unsupported_file"
    assert "reads text only" in events[0].message and "1 file(s)" in events[0].message


async def test_the_embedded_model_run_ends_with_that_error() -> None:
    agent = Agent(LocalModel("/nonexistent/model.gguf"))
    events = [e async for e in agent.stream([UserMessage("What?", files=[IMAGE, PAPER])])]
    errors = [e for e in events if isinstance(e, RunError)]
    assert errors and errors[0].code == "unsupported_file" and "2 file(s)" in errors[0].message
    assert events[-1] is errors[0]  # the run ends on it, nothing answered


# --- the part itself ------------------------------------------------------------------------


def test_a_file_part_survives_json_and_the_journal_dict() -> None:
    message = UserMessage("look", "u1", [IMAGE, HOSTED])
    assert message_from_dict(json.loads(json.dumps(message_to_dict(message)))) == message
    assert MessageHistory.validate_json(MessageHistory.dump_json([message])) == [message]
    old = message_from_dict({"role": "user", "content": "from before files existed"})
    assert isinstance(old, UserMessage) and old.files == []


def test_a_file_part_has_exactly_one_of_data_and_url() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        FilePart("image/png")
    with pytest.raises(ValueError, match="exactly one"):
        FilePart("image/png", data=PNG, url="https://example.com/a.png")
    with pytest.raises(ValueError, match="not a message"):
        message_from_dict({"role": "user", "content": "x", "files": [{"media_type": "image/png"}]})


def test_from_bytes_and_back() -> None:
    part = FilePart.from_bytes(b"\x89PNG", "image/png", "a.png")
    assert part.content() == b"\x89PNG" and part.data_url().startswith("data:image/png;base64,")
    assert part.top_type == "image"
    with pytest.raises(ValueError):
        HOSTED.content()


def test_tool_results_are_untouched_by_files() -> None:
    result = ToolResultMessage("c1", "t", "ok")
    assert message_from_dict(message_to_dict(result)) == result
