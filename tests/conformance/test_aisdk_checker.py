"""The AI SDK checker: the real ``ai`` clients' chunk schemas accept what each version
defines and refuse the rest; the sequencing rules catch streams the schemas cannot."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance import aisdk
from conformance.traffic import Exchange

STREAM = [
    {"type": "start", "messageId": "m1"},
    {"type": "start-step"},
    {"type": "text-start", "id": "t1"},
    {"type": "text-delta", "id": "t1", "delta": "hi"},
    {"type": "text-end", "id": "t1"},
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]
RESET = [*STREAM[:4], {"type": "reset-step"}, *STREAM[2:]]  # the step's text, sent again


def _exchange(chunks: list[Any], version: int, *, done: bool = True) -> Exchange:
    body = {"id": "c1", "messages": [], "trigger": "submit-message"}
    exchange = Exchange("POST", "/api/chat", "", {"x-ai-sdk-version": str(version)}, b"")
    exchange.body = json.dumps(body).encode()
    exchange.complete = True
    frames = [f"data: {json.dumps(c)}\n\n" for c in chunks] + (["data: [DONE]\n\n"] if done else [])
    exchange.stream.extend("".join(frames).encode())
    return exchange


def test_the_real_clients_accept_and_refuse_per_version() -> None:
    """One node process for all: a plain stream passes every version; ``reset-step`` is ai
    7's alone; a null where a field is optional and an unknown chunk fail everywhere."""
    null_title = {"type": "tool-input-start", "toolCallId": "c", "toolName": "t", "title": None}
    cases = [
        (5, STREAM),
        (6, STREAM),
        (7, STREAM),
        (5, RESET),
        (6, RESET),
        (7, RESET),
        (7, [STREAM[0], null_title]),
        (7, [STREAM[0], {"type": "no-such-chunk"}]),
        (7, [STREAM[0], {"type": "text-delta", "id": "nope", "delta": "x"}]),
    ]
    verdicts = aisdk.node_errors([{"version": v, "chunks": c} for v, c in cases])
    assert verdicts[:3] == [[], [], []]
    assert verdicts[3] and verdicts[4], verdicts
    assert verdicts[5] == []
    assert all(verdicts[6:]), verdicts


BROKEN: dict[str, tuple[list[Any], bool, str]] = {
    "no start first": (STREAM[1:], True, "not start"),
    "a chunk after finish": ([*STREAM, {"type": "start-step"}], True, "after finish"),
    "no [DONE]": (STREAM, False, "[DONE]"),
    "a delta of a part never started": ([STREAM[0], STREAM[3], STREAM[-1]], True, "not open"),
    "a text part never ended": ([*STREAM[:4], *STREAM[5:]], True, "never closed"),
    "a step never finished": ([*STREAM[:5], STREAM[-1]], True, "finish-step"),
    "a null optional": ([{**STREAM[0], "messageMetadata": None}, *STREAM[1:]], True, "null"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_stream_fails(case: str) -> None:
    chunks, done, expected = BROKEN[case]
    problems, _ = aisdk.check(_exchange(chunks, 7, done=done))
    assert any(expected in p for p in problems), problems


def test_reset_step_is_refused_to_older_clients_by_the_rules_too() -> None:
    assert aisdk.check(_exchange(RESET, 7))[0] == []
    problems, _ = aisdk.check(_exchange(RESET, 6))
    assert any("reset-step" in p for p in problems), problems


def test_tool_metadata_is_refused_to_older_clients_by_the_rules() -> None:
    failed = {"type": "tool-output-error", "toolCallId": "c", "errorText": "boom"}
    failed["toolMetadata"] = {"callwright": {"errorKind": "failed"}}
    start = {"type": "tool-input-start", "toolCallId": "c", "toolName": "t"}
    stream = [*STREAM[:2], start, failed, *STREAM[-2:]]
    assert aisdk.check(_exchange(stream, 7))[0] == []
    problems, _ = aisdk.check(_exchange(stream, 6))
    assert problems == ["toolMetadata sent to an ai 6 client"], problems


@pytest.mark.parametrize(("started_for", "flagged"), [(6, True), (7, False)])
def test_a_replay_is_held_to_the_version_its_run_was_started_for(
    started_for: int, flagged: bool
) -> None:
    post = _exchange(STREAM, started_for)
    post.response_headers["x-callwright-run-id"] = "run-1"
    replay = _exchange(RESET, 6)
    replay.method, replay.path, replay.headers = "GET", "/runs/run-1/events", {}
    problems, stream = aisdk.check(replay, aisdk.run_versions([post, replay]))
    assert stream["version"] == started_for
    assert any("reset-step" in p for p in problems) is flagged, problems
