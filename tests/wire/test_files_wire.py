"""Files and images in user messages, as the decoders read them and as the server refuses
them: the AI SDK's ``file`` parts and AG-UI's media and legacy ``binary`` parts become
``FilePart``s (the AG-UI bodies checked first against the ``ag-ui-protocol`` models), and
files beyond the limits are clear 4xx over real HTTP, before any model is asked."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from ag_ui.core import RunAgentInput

from callwright import Agent, FilePart
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ScriptedModel
from callwright.server import ServerLimits, create_app
from callwright.wire import FileLimits, WireError, agui, aisdk
from live_server import Server

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
    "2mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
DOT = FilePart("image/png", data=PNG, filename="dot.png")


def ai_body(*parts: dict[str, Any], text: str = "What is this?") -> dict[str, Any]:
    return {
        "id": "chat1",
        "messages": [
            {"id": "u1", "role": "user", "parts": [*parts, {"type": "text", "text": text}]}
        ],
        "trigger": "submit-message",
    }


def agui_body(*parts: dict[str, Any], text: str = "What is this?") -> dict[str, Any]:
    body = {
        "threadId": "t1",
        "runId": "r1",
        "state": {},
        "messages": [
            {"id": "u1", "role": "user", "content": [{"type": "text", "text": text}, *parts]}
        ],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    return body


def file_ui(url: str, media_type: str = "image/png", **extra: Any) -> dict[str, Any]:
    return {"type": "file", "mediaType": media_type, "url": url, **extra}


def user(messages: list[Any]) -> UserMessage:
    message = messages[-1]
    assert isinstance(message, UserMessage)
    return message


# --- the AI SDK --------------------------------------------------------------------------


def test_ai_sdk_data_url_becomes_inline_data() -> None:
    body = ai_body(file_ui(f"data:image/png;base64,{PNG}", filename="dot.png"))
    message = user(aisdk.decode_request(body).messages)
    assert message.content == "What is this?" and message.files == [DOT]


def test_ai_sdk_https_url_stays_a_url_with_a_bare_type_from_ai_7() -> None:
    body = ai_body(file_ui("https://example.com/cat.jpg", "image"))
    assert user(aisdk.decode_request(body).messages).files == [
        FilePart("image", url="https://example.com/cat.jpg")
    ]


def test_ai_sdk_data_url_fills_in_a_bare_type_and_percent_encoded_text() -> None:
    body = ai_body(
        file_ui(f"data:image/png;base64,{PNG}", "image"),
        file_ui("data:text/plain;charset=utf-8,Hello%20world", "text/plain", filename="a.txt"),
    )
    files = user(aisdk.decode_request(body).messages).files
    assert files[0] == FilePart("image/png", data=PNG)
    assert files[1].media_type == "text/plain" and files[1].content() == b"Hello world"


def test_ai_sdk_text_only_messages_have_no_files() -> None:
    assert user(aisdk.decode_request(ai_body()).messages).files == []


# --- AG-UI -----------------------------------------------------------------------------------


def decode_agui(body: dict[str, Any]) -> UserMessage:
    RunAgentInput.model_validate(body)  # a body the protocol's own models accept
    return user(agui.decode_request(body).messages)


def test_agui_image_part_with_a_data_source() -> None:
    part = {
        "type": "image",
        "source": {"type": "data", "value": PNG, "mimeType": "image/png"},
        "metadata": {"filename": "dot.png"},
    }
    message = decode_agui(agui_body(part))
    assert message.content == "What is this?" and message.files == [DOT]


def test_agui_document_part_with_a_url_source() -> None:
    part = {
        "type": "document",
        "source": {
            "type": "url",
            "value": "https://example.com/a.pdf",
            "mimeType": "application/pdf",
        },
    }
    assert decode_agui(agui_body(part)).files == [
        FilePart("application/pdf", url="https://example.com/a.pdf")
    ]


def test_agui_image_url_without_a_mime_type_is_an_image() -> None:
    part = {"type": "image", "source": {"type": "url", "value": "https://example.com/cat.jpg"}}
    assert decode_agui(agui_body(part)).files == [
        FilePart("image", url="https://example.com/cat.jpg")
    ]


def test_agui_legacy_binary_part() -> None:
    part = {"type": "binary", "mimeType": "image/png", "data": PNG, "filename": "dot.png"}
    message = user(agui.decode_request(agui_body(part)).messages)  # not 1.0: no model check
    assert message.files == [DOT]


def test_agui_plain_string_content_has_no_files() -> None:
    body = agui_body()
    body["messages"][0]["content"] = "hello"
    assert decode_agui(body).files == []


# --- refusals ----------------------------------------------------------------------------------

BIG = "A" * (3 * 1024 * 1024)  # 2.25 MiB decoded

REFUSED = [
    ("ai", ai_body(*[file_ui("https://example.com/a.png")] * 11), 413, "too_many_files"),
    ("ai", ai_body(file_ui(f"data:image/png;base64,{BIG}")), 413, "file_too_large"),
    (
        "ai",
        ai_body(file_ui("data:application/zip;base64,UEsFBg==", "application/zip")),
        400,
        "unsupported_media_type",
    ),
    ("ai", ai_body(file_ui("data:image/png;base64,not*base64")), 400, "invalid_file"),
    ("ai", ai_body(file_ui("data:image/png;base64")), 400, "invalid_file"),
    (
        "ai",
        ai_body(file_ui("http://169.254.169.254/latest/meta-data", "image/png")),
        400,
        "invalid_file",
    ),
    ("ai", ai_body(file_ui("file:///etc/passwd", "text/plain")), 400, "invalid_file"),
    ("ai", ai_body({"type": "file", "mediaType": "image/png"}), 400, "invalid_file"),
    ("ai", ai_body(file_ui("data:;base64,AAAA", "image")), 400, "unsupported_media_type"),
    ("ai", ai_body(file_ui("data:text/html;base64,PGI+", "image/png")), 400, "invalid_file"),
    ("ai", ai_body(file_ui("data:text/html;base64,PGI+", "image")), 400, "invalid_file"),
    (
        "agui",
        agui_body({"type": "binary", "mimeType": "image/png", "url": "data:text/html,<b>"}),
        400,
        "invalid_file",
    ),
    (
        "agui",
        agui_body(*[{"type": "image", "source": {"type": "url", "value": "https://e.x/a"}}] * 11),
        413,
        "too_many_files",
    ),
    (
        "agui",
        agui_body(
            {"type": "image", "source": {"type": "data", "value": BIG, "mimeType": "image/png"}}
        ),
        413,
        "file_too_large",
    ),
    (
        "agui",
        agui_body(
            {"type": "audio", "source": {"type": "data", "value": BIG, "mimeType": "audio/wav"}}
        ),
        413,
        "file_too_large",
    ),
    (
        "agui",
        agui_body(
            {"type": "image", "source": {"type": "data", "value": "%%%", "mimeType": "image/png"}}
        ),
        400,
        "invalid_file",
    ),
    (
        "agui",
        agui_body({"type": "binary", "mimeType": "image/png", "id": "upload-1"}),
        400,
        "invalid_file",
    ),
    ("agui", agui_body({"type": "image"}), 400, "invalid_file"),
]


# AG-UI: a well-formed part the server cannot use is skipped, and the model told so
WAV = {"type": "audio", "source": {"type": "data", "value": "AAAA", "mimeType": "audio/wav"}}
HANDLE = {"type": "image", "source": {"type": "file", "value": "file-abc", "provider": "openai"}}
SKIPPED = [
    (WAV, "[audio part 0 was not passed on: media type 'audio/wav' is not accepted"),
    (HANDLE, "[image part 0 was not passed on: provider file handles are not accepted"),
]


@pytest.mark.parametrize(("part", "note"), SKIPPED)
def test_agui_skips_a_part_it_cannot_use_and_says_so(part: dict[str, Any], note: str) -> None:
    png = {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"}}
    sent = user(agui.decode_request(agui_body(part, png)).messages)
    assert sent.files == [FilePart("image/png", data=PNG)]
    first, second = sent.content.split("\n")
    assert first == "What is this?" and second.startswith(note), sent.content


def tool_history(*parts: dict[str, Any]) -> dict[str, Any]:
    """A 1.1 client's history: a call, and its result as content parts (``parts``)."""
    body = agui_body()
    call = {"id": "call_1", "type": "function", "function": {"name": "chart", "arguments": "{}"}}
    body["messages"] += [
        {"id": "a1", "role": "assistant", "toolCalls": [call]},
        {"id": "t1", "role": "tool", "toolCallId": "call_1", "content": list(parts)},
    ]
    return body


def test_an_agui_tool_result_of_content_parts_keeps_its_files() -> None:
    """Held to a tool's limits, as the result was: audio comes back too (a user message's
    would be skipped); a provider file handle is left out."""
    png = {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"}}
    png["metadata"] = {"filename": "dot.png"}
    body = tool_history({"type": "text", "text": "Here it is"}, png, WAV, HANDLE)
    result = agui.decode_request(body).messages[-1]
    assert isinstance(result, ToolResultMessage) and not result.is_error
    assert result.content == "Here it is"
    assert result.files == [DOT, FilePart("audio/wav", data="AAAA")]


@pytest.mark.parametrize(
    "part",
    [
        {"type": "image", "source": {"type": "data", "value": "%%%", "mimeType": "image/png"}},
        {
            "type": "image",
            "source": {"type": "url", "value": "http://x/a.png", "mimeType": "image/png"},
        },
        {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "png"}},
    ],
)
def test_an_agui_tool_result_with_a_malformed_file_is_refused(part: dict[str, Any]) -> None:
    with pytest.raises(WireError) as caught:
        agui.decode_request(tool_history(part))
    assert caught.value.code == "invalid_file" and caught.value.status == 400
    assert caught.value.message.startswith("a tool result's file: file 0"), caught.value.message


@pytest.mark.parametrize(("wire", "body", "status", "code"), REFUSED)
def test_decoders_refuse_with_a_code(
    wire: str, body: dict[str, Any], status: int, code: str
) -> None:
    with pytest.raises(WireError) as caught:
        (aisdk if wire == "ai" else agui).decode_request(body)
    assert (caught.value.status, caught.value.code) == (status, code)


def test_limits_are_configurable() -> None:
    limits = FileLimits(max_file_bytes=10, max_files=1, media_types=frozenset({"image/png"}))
    body = ai_body(file_ui(f"data:image/png;base64,{PNG}"))
    with pytest.raises(WireError, match="over the limit of 10"):
        aisdk.decode_request(body, files=limits)
    roomy = FileLimits(media_types=frozenset({"image/png", "application/zip"}))
    zipped = ai_body(file_ui("data:application/zip;base64,UEsFBg==", "application/zip"))
    assert user(aisdk.decode_request(zipped, files=roomy).messages).files[0].media_type == (
        "application/zip"
    )


def test_a_long_media_type_is_not_echoed_whole() -> None:
    body = ai_body(file_ui("https://example.com/a", "x" * 10_000 + "\r\n"))
    with pytest.raises(WireError) as caught:
        aisdk.decode_request(body)
    assert len(caught.value.message) < 400 and "\r\n" not in caught.value.message


# --- over real HTTP, with a scripted model that records what it is sent ---------------------------


@pytest.fixture
def scripted() -> Iterator[tuple[Server, ScriptedModel]]:
    model = ScriptedModel(lambda request: ["Seen."])
    with Server(create_app(Agent(model))) as server:
        yield server, model


@pytest.mark.parametrize(("wire", "body", "status", "code"), REFUSED)
def test_the_server_refuses_before_any_model_call(
    scripted: tuple[Server, ScriptedModel], wire: str, body: dict[str, Any], status: int, code: str
) -> None:
    server, model = scripted
    path = "/api/chat" if wire == "ai" else "/agui"
    response = httpx.post(server.url + path, json=body, timeout=30)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    assert model.requests == []


@pytest.mark.parametrize("wire", ["ai", "agui"])
def test_the_model_is_sent_the_files(scripted: tuple[Server, ScriptedModel], wire: str) -> None:
    server, model = scripted
    if wire == "ai":
        body = ai_body(file_ui(f"data:image/png;base64,{PNG}", filename="dot.png"))
        path = "/api/chat"
    else:
        image = {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"}}
        body = agui_body({**image, "metadata": {"filename": "dot.png"}})
        path = "/agui"
    with httpx.stream("POST", server.url + path, json=body, timeout=30) as response:
        assert response.status_code == 200
        response.read()
    sent = user(model.requests[0].messages)
    assert sent.content == "What is this?" and sent.files == [DOT]
    assert base64.b64decode(sent.files[0].data or "").startswith(b"\x89PNG")


def test_a_skipped_part_does_not_fail_the_run(scripted: tuple[Server, ScriptedModel]) -> None:
    server, model = scripted
    with httpx.stream("POST", server.url + "/agui", json=agui_body(WAV), timeout=30) as response:
        assert response.status_code == 200
        response.read()
    sent = user(model.requests[0].messages)
    assert sent.files == [] and "[audio part 0 was not passed on" in sent.content
    assert b'"RUN_FINISHED"' in response.content


@pytest.mark.parametrize("wire", ["ai", "agui"])
def test_the_server_takes_its_file_limits_from_server_limits(wire: str) -> None:
    model = ScriptedModel(lambda request: ["Seen."])
    limits = ServerLimits(files=FileLimits(max_files=1))
    png = f"data:image/png;base64,{PNG}"
    if wire == "ai":
        path, one, two = "/api/chat", ai_body(file_ui(png)), ai_body(file_ui(png), file_ui(png))
    else:
        part = {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"}}
        path, one, two = "/agui", agui_body(part), agui_body(part, part)
    with Server(create_app(Agent(model), limits=limits)) as server:
        refused = httpx.post(server.url + path, json=two, timeout=30)
        taken = httpx.post(server.url + path, json=one, timeout=30)
    assert refused.status_code == 413, refused.text
    assert refused.json()["error"]["code"] == "too_many_files"
    assert taken.status_code == 200, taken.text
