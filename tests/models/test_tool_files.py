"""Tools that return files and images, as each model adapter sends them: through the real
openai, anthropic and google-genai SDKs over real HTTP to a replay server, asserting on
the exact request the provider gets; the text stand-in for models that see no files;
malformed and oversized files as error results."""

from __future__ import annotations

import base64
from typing import Any

from callwright import (
    MAX_TOOL_FILE_BYTES,
    Agent,
    File,
    Limits,
    MessageHistory,
    ToolResult,
    tool,
)
from callwright.messages import AssistantMessage, ToolCallPart, ToolResultMessage, UserMessage
from callwright.models._local_stages import plain_conversation
from callwright.models.base import ModelRequest
from callwright.models.openai_responses import OpenAIResponsesModel
from callwright.models.scripted import ScriptedModel, call
from models._gemini import answer as gemini_answer
from models._gemini import sent as gemini_sent
from models._gemini import text as gemini_text
from models._responses import Stream
from models.test_files import (
    FAST,
    PDF,
    PNG,
    anthropic,
    anthropic_answer,
    collect,
    openai,
    openai_answer,
)

PNG_BYTES = base64.b64decode(PNG)
CHART = File(PNG_BYTES, "image/png", filename="chart.png")
WAV = File(b"RIFF....WAVE", "audio/wav", filename="hum.wav")


def history(*files: File) -> list[Any]:
    """A step in which the model called ``chart`` and the tool answered with files."""
    return [
        UserMessage("Plot it"),
        AssistantMessage("", [ToolCallPart("c1", "chart", {})]),
        ToolResultMessage("c1", "chart", "Here is the chart", files=[f.part() for f in files]),
    ]


# --- each provider's way ------------------------------------------------------------------


async def test_openai_chat_shows_the_image_in_a_user_turn_after_the_tool_message(
    replay: Any,
) -> None:
    openai_answer(replay)
    await collect(openai(replay), *history(CHART, WAV))
    sent = replay.requests[0]["json"]["messages"]
    assert sent[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "Here is the chart\n[the tool returned a audio/wav file 'hum.wav', "
        "not shown here]",
    }
    assert sent[3] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "The files the tools returned above:"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        ],
    }
    assert len(sent) == 4


async def test_openai_responses_puts_the_image_in_the_function_call_output(
    replay: Any,
) -> None:
    s = Stream().created()
    s.message("msg_1", ["A chart."])
    s.completed((5, 2)).send(replay)
    m = OpenAIResponsesModel("gpt-test", base_url=replay.url + "/v1", api_key="k", retry=FAST)
    pdf = File(base64.b64decode(PDF), "application/pdf", filename="report.pdf")
    await collect(m, *history(CHART, pdf))
    output = replay.requests[0]["json"]["input"][-1]
    assert output == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [
            {"type": "input_text", "text": "Here is the chart"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
            {
                "type": "input_file",
                "filename": "report.pdf",
                "file_data": f"data:application/pdf;base64,{PDF}",
            },
        ],
    }


async def test_anthropic_gets_image_blocks_inside_the_tool_result(replay: Any) -> None:
    anthropic_answer(replay)
    await collect(anthropic(replay), *history(CHART))
    turn = replay.requests[0]["json"]["messages"][-1]
    assert turn == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "c1",
                "content": [
                    {"type": "text", "text": "Here is the chart"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                    },
                ],
            }
        ],
    }


async def test_gemini_gets_inline_data_in_the_function_response(replay: Any) -> None:
    from callwright.models.gemini import GeminiModel

    gemini_answer(replay, gemini_text("A chart."))
    m = GeminiModel("gemini-3-pro", api_key="k", base_url=replay.url, retry=FAST)
    hosted = File(url="https://example.com/map.png", media_type="image/png")
    await collect(m, *history(CHART, WAV, hosted))
    response = gemini_sent(replay, 0)["contents"][-1]["parts"][0]["functionResponse"]
    assert response["response"] == {
        "output": "Here is the chart\n[the tool returned a audio/wav file 'hum.wav', "
        "not shown here]\n[the tool returned a image/png file at "
        "https://example.com/map.png, not shown here]"
    }
    assert response["parts"] == [{"inlineData": {"data": PNG, "mimeType": "image/png"}}]


def test_a_model_that_sees_no_files_reads_a_stand_in() -> None:
    turns = plain_conversation(history(CHART))
    assert turns[-1] == {
        "role": "user",
        "content": "Tool chart result: Here is the chart\n"
        "[the tool returned a image/png file 'chart.png', not shown here]",
    }


# --- a run: the tool's value, the model's next request ------------------------------------


@tool
def chart() -> list[Any]:
    """Draw the chart."""
    return ["Here is the chart", CHART]


async def test_a_tool_returning_an_image_is_seen_by_the_model_on_its_next_request() -> None:
    model = ScriptedModel([[call("chart", id="c1")], ["A rising line."]])
    result = await Agent(model, tools=[chart]).run("Plot it")
    assert result.output == "A rising line."
    seen = model.requests[1].messages[-1]
    assert isinstance(seen, ToolResultMessage)
    assert seen.content == "Here is the chart"
    assert [(f.media_type, f.content(), f.filename) for f in seen.files] == [
        ("image/png", PNG_BYTES, "chart.png")
    ]


async def test_through_the_openai_sdk_the_next_request_carries_the_image(replay: Any) -> None:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    tool_call = {"index": 0, "id": "c1", "type": "function"}
    tool_call["function"] = {"name": "chart", "arguments": "{}"}
    replay.sse(
        [
            {**chunk, "choices": [{"index": 0, "delta": {"tool_calls": [tool_call]}}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]
    )
    openai_answer(replay, "A rising line.")
    result = await Agent(openai(replay), tools=[chart]).run("Plot it")
    assert result.output == "A rising line."
    second = replay.requests[1]["json"]["messages"]
    assert second[-2] == {"role": "tool", "tool_call_id": "c1", "content": "Here is the chart"}
    assert second[-1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}"},
    }


# --- malformed and oversized --------------------------------------------------------------


@tool
def huge() -> File:
    """Return a picture over the limit."""
    return File(b"\0" * (MAX_TOOL_FILE_BYTES + 1), "image/png")


@tool
def no_type() -> File:
    """Return bytes without a media type."""
    return File(b"abc", "png")


@tool
def plain_http() -> File:
    """Return an http URL."""
    return File(url="http://10.0.0.1/a.png", media_type="image/png")


@tool
def both() -> File:
    """Build a File with neither data nor url."""
    return File(media_type="image/png")


async def run_tool(name: str, tools: list[Any]) -> ToolResultMessage:
    model = ScriptedModel([[call(name, id="c1")], ["ok"]])
    await Agent(model, tools=tools).run("go")
    seen = model.requests[1].messages[-1]
    assert isinstance(seen, ToolResultMessage)
    return seen


async def test_an_oversized_image_is_an_error_result_the_model_sees() -> None:
    seen = await run_tool("huge", [huge])
    assert seen.is_error and seen.files == []
    assert f"at most {MAX_TOOL_FILE_BYTES:,} fit in one result" in seen.content


@tool
def small_pictures() -> list[File]:
    """Return two pictures of 600 bytes."""
    return [File(b"\0" * 600, "image/png"), File(b"\1" * 600, "image/png")]


async def test_the_file_limit_is_the_agents() -> None:
    """``Limits(max_tool_file_bytes=...)`` replaces the default for the agent's tools."""
    model = ScriptedModel([[call("small_pictures", id="c1")], ["ok"]])
    agent = Agent(model, [small_pictures], limits=Limits(max_tool_file_bytes=1000))
    await agent.run("go")
    seen = model.requests[1].messages[-1]
    assert isinstance(seen, ToolResultMessage) and seen.is_error and seen.files == []
    assert "the tool's files hold 1,200 bytes or more; at most 1,000 fit" in seen.content
    model = ScriptedModel([[call("small_pictures", id="c1")], ["ok"]])
    agent = Agent(model, [small_pictures], limits=Limits(max_tool_file_bytes=1200))
    await agent.run("go")
    seen = model.requests[1].messages[-1]
    assert isinstance(seen, ToolResultMessage) and not seen.is_error
    assert [len(f.data or "") for f in seen.files] == [800, 800]  # base64 of 600 bytes


async def test_malformed_files_are_error_results_naming_the_problem() -> None:
    seen = await run_tool("no_type", [no_type])
    assert seen.is_error and "'png' is not a media type" in seen.content
    seen = await run_tool("plain_http", [plain_http])
    assert seen.is_error and "must be https" in seen.content
    seen = await run_tool("both", [both])
    assert seen.is_error and "exactly one of data and url" in seen.content


def test_a_request_with_tool_files_is_plain_data() -> None:
    request = ModelRequest(history(CHART))
    assert isinstance(request.messages[-1], ToolResultMessage)
    assert request.messages[-1].files[0].filename == "chart.png"


def test_files_cross_to_a_durable_worker_and_back_as_json() -> None:
    import json

    from callwright.durable._crossing import outcome, result_payload

    sent = ToolResult("Here is the chart", files=[CHART.part()])
    back = outcome(json.loads(json.dumps(result_payload(sent))))
    assert back.files == sent.files and back.content == "Here is the chart"


def test_a_result_message_with_files_survives_the_history_json() -> None:
    message = history(CHART)[-1]
    assert MessageHistory.validate_json(MessageHistory.dump_json([message])) == [message]


def test_recovery_rebuilds_a_finished_tools_files_from_its_journaled_output() -> None:
    from callwright._tool_files import file_to_dict
    from callwright.store._recovery import rebuilt_history

    asked = AssistantMessage("", [ToolCallPart("c1", "chart", {})])
    output = {"content": "Here is the chart", "is_error": False}
    output["files"] = [file_to_dict(CHART.part())]
    ops = [
        {
            "name": "tool:chart",
            "call_id": "c1",
            "status": "completed",
            "output": output,
            "idempotent": False,
        }
    ]
    settled = rebuilt_history([UserMessage("Plot it"), asked], ops, idempotent=set())
    result = settled[-1]
    assert isinstance(result, ToolResultMessage)
    assert result.files == [CHART.part()] and result.content == "Here is the chart"
