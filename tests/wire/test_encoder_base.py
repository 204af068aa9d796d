"""The encoder base: the per-token fast path writes exactly what the dict path would,
one definition of the headers, version parsing, errors and the stream's end."""

from __future__ import annotations

import json
from typing import Any

import pytest

from callwright.events import (
    PendingCall,
    ReasoningDelta,
    RunError,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    Subagent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
    ToolProgress,
)
from callwright.usage import Usage
from callwright.wire import WireError
from callwright.wire._base import HEADERS, SSEEncoder, major_version, sse, sse_all
from callwright.wire.agui import AGUIEncoder, wants_protocol_1
from callwright.wire.aisdk import AISDKEncoder, client_version

ODD = 'a"b\\c\n\t\x01\x1f\x7f é 漢 \u2028 😀 </script>'


def encoders() -> list[SSEEncoder]:
    return [AGUIEncoder(), AGUIEncoder(protocol_1=False)] + [
        AISDKEncoder(version=v) for v in (5, 6, 7)
    ]


@pytest.mark.parametrize("encoder", encoders(), ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("text", ["word ", "", ODD])
def test_fast_path_writes_what_the_dict_path_would(encoder: SSEEncoder, text: str) -> None:
    for event in (
        TextDelta("msg_" + ODD, text),
        ReasoningDelta("r_1", text),
        ToolCallArgs("call_1", text),
    ):
        assert encoder.encode(event) == sse_all(encoder.payloads(event))


def test_empty_deltas_are_dropped_only_where_the_protocol_requires_text() -> None:
    assert AGUIEncoder().encode(TextDelta("m", "")) == b""
    assert json.loads(AISDKEncoder().encode(TextDelta("m", ""))[6:]) == {
        "type": "text-delta",
        "id": "m",
        "delta": "",
    }


def test_sub_run_frames_are_the_dict_path_with_the_sub_run_id() -> None:
    encoder = AGUIEncoder()
    frames = encoder.encode(
        Subagent("call_d", "helper_tool", "sub_1", "helper", TextDelta("m", ODD))
    )
    assert frames == sse(
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": ODD, "subagentRunId": "sub_1"}
    )


def test_progress_document_lives_until_the_result() -> None:
    encoder = AISDKEncoder()
    encoder.encode(ToolProgress("c", "t", "one", 0.5))
    second = encoder.payloads(ToolProgress("c", "t", "two"))
    assert second[0]["data"] == {
        "toolCallId": "c",
        "toolName": "t",
        "status": "running",
        "text": "two",
        "fraction": 0.5,
    }
    done = encoder.payloads(ToolCallResult("c", "t", "output-available", output=1))
    assert done[0]["data"]["status"] == "complete"
    again = encoder.payloads(ToolProgress("c", "t", "three"))
    assert again[0]["data"] == {
        "toolCallId": "c",
        "toolName": "t",
        "status": "running",
        "text": "three",
    }


def test_headers_are_one_definition() -> None:
    assert AGUIEncoder.headers is HEADERS
    assert dict(HEADERS) == {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "connection": "keep-alive",
        "x-accel-buffering": "no",
    }
    assert list(AISDKEncoder.headers) == [
        "content-type",
        "cache-control",
        "connection",
        "x-vercel-ai-ui-message-stream",
        "x-accel-buffering",
    ]


@pytest.mark.parametrize("encoder", encoders(), ids=lambda e: type(e).__name__)
def test_server_error_frame_is_the_run_error_frame(encoder: SSEEncoder) -> None:
    assert encoder.error("it broke", "server_error") == encoder.encode(
        RunError("it broke", "server_error")
    )


def test_only_the_ai_sdk_stream_has_a_trailer() -> None:
    assert AGUIEncoder().close() == b""
    assert AISDKEncoder().close() == b"data: [DONE]\n\n"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("6", 6), ("v7", 7), (" 6.0.326 ", 6), ("1.0.0", 1), ("", None), ("x", None), ("²", None)],
)
def test_major_version(raw: str, expected: int | None) -> None:
    assert major_version(raw) == expected


def test_a_version_that_is_not_a_number_is_refused_not_a_crash() -> None:
    assert wants_protocol_1({"protocolVersion": "²"}) is False
    with pytest.raises(WireError):
        client_version({"x-ai-sdk-version": "²"})


def interrupt(pending: PendingCall) -> dict[str, Any]:
    frame = AGUIEncoder().encode(RunFinished("r", "t", "paused", pending=[pending]))
    interrupts: list[dict[str, Any]] = json.loads(frame[6:])["outcome"]["interrupts"]
    return interrupts[0]


def test_interrupt_offers_argument_edits_from_the_pending_call() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    editable = interrupt(PendingCall("c", "delete", {}, "approval", "ap", None, schema))
    assert editable["responseSchema"]["properties"]["arguments"] == schema
    fixed = interrupt(PendingCall("c", "delete", {}, "approval", "ap"))
    assert "arguments" not in fixed["responseSchema"]["properties"]


# --- a stream continued by another process ------------------------------------------


def kinds(frames: list[bytes]) -> list[tuple[str, str | None]]:
    payloads = [json.loads(frame[6:]) for frame in frames]
    return [(p["type"], p.get("messageId") or p.get("stepName") or p.get("id")) for p in payloads]


def test_a_continued_agui_stream_closes_what_the_dead_one_opened() -> None:
    """What a process that died mid-reply left open, closed last opened first (a delegate's
    step and sub-run too), and the continuing encoder's steps numbered after its own."""
    dead = AGUIEncoder()
    frames = [
        dead.encode(e)
        for e in (
            RunStarted("r1", "t1"),
            StepStarted(1, "m1"),
            TextStart("m1", "m1"),
            TextDelta("m1", "hello"),
            TextEnd("m1"),
            StepFinished(1, "m1", "stop", Usage()),
            StepStarted(2, "m2"),
            ToolCallStart("call_d", "helper_tool", "m2"),
            ToolCallEnd("call_d", "helper_tool", {}),
            *[
                Subagent("call_d", "helper_tool", "sub_1", "helper", inner)
                for inner in (
                    RunStarted("sub_1", "t1"),
                    StepStarted(1, "s1"),
                    TextStart("s1", "m3"),
                    TextDelta("m3", "half a"),
                )
            ],
        )
    ]
    going_on = AGUIEncoder()
    closing = going_on.continue_after(frames)
    assert kinds(closing) == [
        ("TEXT_MESSAGE_END", "m3"),
        ("STEP_FINISHED", "step-1"),
        ("SUBAGENT_ERROR", None),
        ("STEP_FINISHED", "step-2"),
    ]
    assert [json.loads(c[6:]).get("subagentRunId") for c in closing] == ["sub_1"] * 3 + [None]
    assert json.loads(closing[2][6:])["code"] == "interrupted"
    assert going_on.encode(StepStarted(1, "m4")) == sse(
        {"type": "STEP_STARTED", "stepName": "step-3"}
    )
    assert going_on.continue_after([*frames, *closing]) == []  # nothing left open


def test_a_continued_ai_sdk_stream_closes_its_step_and_text() -> None:
    dead = AISDKEncoder()
    frames = [
        dead.encode(e)
        for e in (RunStarted("r1", "t1"), StepStarted(1, "m1"), TextStart("m1", "t1"))
    ]
    closing = AISDKEncoder().continue_after(frames)
    assert kinds(closing) == [("text-end", "t1"), ("finish-step", None)]


def test_ai_7_retracts_a_half_model_turn_instead_of_closing_it() -> None:
    """A dead process's step cut in its model turn is re-run by the continuing one: ai 7
    gets ``reset-step`` (the half answer is dropped, not followed by the whole one)."""
    dead = AISDKEncoder(version=7)
    frames = [
        dead.encode(e)
        for e in (
            RunStarted("r1", "t1"),
            StepStarted(1, "m1"),
            TextStart("m1", "t1"),
            TextDelta("t1", "hal"),
        )
    ]
    going_on = AISDKEncoder(version=7)
    closing = going_on.continue_after(frames)
    assert kinds(closing) == [("reset-step", None), ("finish-step", None)]
    assert going_on.continue_after([*frames, *closing]) == []  # nothing left open
    older = AISDKEncoder(version=6).continue_after(frames)
    assert kinds(older) == [("text-end", "t1"), ("finish-step", None)]
    # once the turn announced a call, the model is not asked again: closed, not retracted
    called = [*frames, dead.encode(ToolCallStart("c1", "weather", "m1"))]
    assert ("reset-step", None) not in kinds(AISDKEncoder(version=7).continue_after(called))
