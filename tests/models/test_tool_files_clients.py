"""A tool that returns an image, through a real callwright server to the real npm clients
(tests/js/drive_files.mjs) and back to a model server over real HTTP (the replay server of
tests/models): the client gets the file the way its protocol has for it, and the model
sees the image on its next request, including the one after the client sends the history
back."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import conformance
from callwright import MAX_TOOL_FILE_BYTES, Agent, File, FilePart, tool
from callwright.messages import ToolResultMessage
from callwright.models.openai import OpenAIModel
from callwright.server import ServerLimits, create_app
from callwright.store import SQLiteJournal
from conformance.traffic import CHECKING, EXCHANGES
from live_server import Server
from models.test_files_clients import FAST, PNG, answer, drive, model_messages

DATA_URL = f"data:image/png;base64,{PNG}"
IMAGE_PART = {"type": "image_url", "image_url": {"url": DATA_URL}}
SHOWN = {
    "role": "user",
    "content": [{"type": "text", "text": "The files the tools returned above:"}, IMAGE_PART],
}


@tool
def chart() -> list[Any]:
    """Draw the chart."""
    return ["Here is the chart", File(base64.b64decode(PNG), "image/png", filename="chart.png")]


def call_chart(replay: Any) -> None:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    tool_call = {"index": 0, "id": "call_1", "type": "function"}
    tool_call["function"] = {"name": "chart", "arguments": "{}"}
    replay.sse(
        [
            {**chunk, "choices": [{"index": 0, "delta": {"tool_calls": [tool_call]}}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]
    )


@pytest.fixture
def served(replay: Any) -> Iterator[Server]:
    model = OpenAIModel("gpt-x", base_url=replay.url + "/v1", api_key="k", retry=FAST)
    with Server(create_app(Agent(model, tools=[chart]))) as server:
        yield server


def tool_part(report: dict[str, Any]) -> dict[str, Any]:
    parts = [p for m in report["messages"] for p in m.get("parts", ()) if p["type"] == "tool-chart"]
    assert len(parts) == 1, report["messages"]
    return parts[0]


NEWER = (
    "The producer speaks protocol 1.1; this client speaks 1.0. "
    "Unrecognised material will be stripped with warnings."
)
FILE_PARTS = {
    5: {"type": "media", "data": PNG, "mediaType": "image/png"},
    6: {"type": "file-data", "data": PNG, "mediaType": "image/png", "filename": "chart.png"},
    7: {
        "type": "file",
        "data": {"type": "data", "data": PNG},
        "mediaType": "image/png",
        "filename": "chart.png",
    },
}


@pytest.mark.parametrize("version", [5, 6, 7])
def test_ai_sdk_clients_get_the_image_and_the_model_sees_it_again(
    version: int, served: Server, replay: Any, tmp_path: Path
) -> None:
    call_chart(replay)
    answer(replay, "A rising line.")
    answer(replay, "Still rising.")
    turns = [{"text": "Plot it"}, {"text": "And now?"}]
    report = drive(f"ai{version}", served.url, turns, tmp_path)
    assert report["status"] == "ready" and report["error"] is None, report
    assert report["printed"] == [] and report["errors"] == []
    part = tool_part(report)
    assert part["state"] == "output-available"
    assert part["output"] == {
        "type": "content",
        "value": [{"type": "text", "text": "Here is the chart"}, FILE_PARTS[version]],
    }
    after_tool = model_messages(replay, 1)
    assert after_tool[-2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "Here is the chart",
    }
    assert after_tool[-1] == SHOWN
    # the next turn: the client sent the tool's output back, and the image with it
    next_turn = model_messages(replay, 2)
    assert SHOWN in next_turn
    assert next_turn[-1] == {"role": "user", "content": "And now?"}


@pytest.mark.parametrize("client", ["agui1", "agui0"])
def test_agui_clients_get_the_image_beside_the_text(
    client: str, served: Server, replay: Any, tmp_path: Path
) -> None:
    call_chart(replay)
    answer(replay, "A rising line.")
    report = drive(client, served.url, ["Plot it"], tmp_path)
    run = report["runs"][0]
    assert run["error"] is None and run["events"][-1] == "RUN_FINISHED", report
    assert report["printed"] == []
    [result] = run["toolResults"]
    assert result["content"] == "Here is the chart\n[image/png chart.png]"
    assert result["metadata"] == {
        "callwright": {
            "files": [
                {
                    "type": "image",
                    "source": {"type": "data", "value": PNG, "mimeType": "image/png"},
                    "metadata": {"filename": "chart.png"},
                }
            ]
        }
    }
    assert model_messages(replay, 1)[-1] == SHOWN


def test_an_agui_1_1_client_gets_content_parts_and_sends_them_back(
    served: Server, replay: Any, tmp_path: Path
) -> None:
    call_chart(replay)
    answer(replay, "A rising line.")
    answer(replay, "Still rising.")
    start = len(EXCHANGES)
    CHECKING[0] += 1  # the streams are kept for the conformance check below
    try:
        report = drive("agui1.1", served.url, ["Plot it", "And now?"], tmp_path)
    finally:
        CHECKING[0] -= 1
    streams = EXCHANGES[start:]
    del EXCHANGES[start:]
    first, second = report["runs"]
    assert first["error"] is None and second["events"][-1] == "RUN_FINISHED", report
    # the 1.0 client notes the newer producer (once a run) and strips nothing it shows
    assert set(report["printed"]) == {f"warn: [ag-ui] {NEWER}"}, report["printed"]
    [result] = first["toolResults"]
    assert result["content"] == [
        {"type": "text", "text": "Here is the chart"},
        {
            "type": "image",
            "source": {"type": "data", "value": PNG, "mimeType": "image/png"},
            "metadata": {"filename": "chart.png"},
        },
    ]
    assert "metadata" not in result  # the parts are the content, not beside it
    [tool_message] = [m for m in report["messages"] if m["role"] == "tool"]
    assert tool_message["content"] == result["content"]
    assert model_messages(replay, 1)[-1] == SHOWN
    # the client sent the parts back with the history: the model sees the image again
    assert SHOWN in model_messages(replay, 2)
    assert len(streams) == 2 and conformance.problems(streams) == []


def test_the_journal_keeps_the_tools_image(replay: Any, tmp_path: Path) -> None:
    call_chart(replay)
    answer(replay, "A rising line.")
    journal = SQLiteJournal(str(tmp_path / "runs.db"))
    model = OpenAIModel("gpt-x", base_url=replay.url + "/v1", api_key="k", retry=FAST)
    try:
        with Server(create_app(Agent(model, tools=[chart]), journal=journal)) as server:
            report = drive("ai7", server.url, [{"text": "Plot it"}], tmp_path)
        assert report["status"] == "ready", report
        history = journal.history(report["threadId"])
    finally:
        journal.close()
    [result] = [m for m in history if isinstance(m, ToolResultMessage)]
    assert result.content == "Here is the chart"
    assert result.files == [FilePart("image/png", data=PNG, filename="chart.png")]


@pytest.mark.parametrize(
    ("part", "problem"),
    [
        ({"type": "media", "data": "not base64!", "mediaType": "image/png"}, "not valid base64"),
        ({"type": "file-url", "url": "http://10.0.0.1/a.png", "mediaType": "image/png"}, "https"),
        ({"type": "media", "data": "AAAA", "mediaType": "png"}, "not a media type"),
        (
            {
                "type": "file-data",
                "data": "A" * (MAX_TOOL_FILE_BYTES // 3 * 4 + 8),
                "mediaType": "image/png",
            },
            "at most",
        ),
    ],
)
def test_a_forged_tool_output_file_is_refused_naming_the_problem(
    part: dict[str, Any], problem: str, replay: Any
) -> None:
    output = {"type": "content", "value": [{"type": "text", "text": "x"}, part]}
    tool_part = {
        "type": "tool-chart",
        "toolCallId": "call_1",
        "state": "output-available",
        "input": {},
        "output": output,
    }
    body = {
        "id": "t1",
        "messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Plot it"}]},
            {"id": "a1", "role": "assistant", "parts": [tool_part]},
            {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "And now?"}]},
        ],
        "trigger": "submit-message",
    }
    model = OpenAIModel("gpt-x", base_url=replay.url + "/v1", api_key="k", retry=FAST)
    limits = ServerLimits(max_body_bytes=16 * 1024 * 1024)
    with Server(create_app(Agent(model, tools=[chart]), limits=limits)) as server:
        response = httpx.post(server.url + "/api/chat", json=body, timeout=30)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_file" and problem in error["message"], error
    assert replay.requests == []
