"""The real npm clients against a real server on 127.0.0.1 (tests/js/drive.mjs).

One node process per client runs every scenario; each test reads its scenario's
report. Clients: @ag-ui/client 1.0.0 and 0.0.59 (HttpAgent), ai 5, 6 and 7
(AbstractChat with onToolCall + addToolOutput, addToolApprovalResponse and
sendAutomaticallyWhen). A client that prints anything (a warning about an
unknown or null field, a failed validation) fails the test.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

AGUI = ["agui1", "agui0"]
AI = ["ai5", "ai6", "ai7"]
FINISH_REASONS = {
    "ai5": {"stop", "length", "content-filter", "tool-calls", "error", "other", "unknown"},
    "ai6": {"stop", "length", "content-filter", "tool-calls", "error", "other"},
    "ai7": {"stop", "length", "content-filter", "tool-calls", "error", "interrupted", "other"},
}


def scenario(js: Any, client: str, name: str) -> dict[str, Any]:
    result: dict[str, Any] = js(client)["scenarios"][name]
    assert "crashed" not in result, result
    return result


def wait_cancelled(cancelled: list[str], call_id: str) -> bool:
    deadline = time.monotonic() + 10
    while call_id not in cancelled and time.monotonic() < deadline:
        time.sleep(0.05)
    return call_id in cancelled


# --- AG-UI -------------------------------------------------------------------------------


def finished_cleanly(run: dict[str, Any]) -> dict[str, Any]:
    """The run's RUN_FINISHED event, after checking the client saw no error and it came last.

    The client resolves silently when a stream ends without RUN_FINISHED, so
    this is the check that the run really finished.
    """
    assert run["error"] is None
    assert run["events"][0]["type"] == "RUN_STARTED"
    last = run["events"][-1]
    assert last["type"] == "RUN_FINISHED", [e["type"] for e in run["events"]]
    return last


def texts(messages: list[dict[str, Any]], role: str) -> list[Any]:
    return [m.get("content") for m in messages if m["role"] == role]


@pytest.mark.parametrize("client", AGUI)
class TestAGUIClients:
    def test_plain_chat_with_reasoning(self, js: Any, client: str) -> None:
        r = scenario(js, client, "chat")
        finished_cleanly(r["runs"][0])
        assert texts(r["messages"], "assistant") == ["Hello! How can I help?"]
        assert texts(r["messages"], "reasoning") == ["The user greets me."]
        assert r["printed"] == []

    def test_server_tool_with_streamed_arguments(self, js: Any, client: str) -> None:
        r = scenario(js, client, "weather")
        run = r["runs"][0]
        finished_cleanly(run)
        starts = [e for e in run["events"] if e["type"] == "TOOL_CALL_START"]
        assert len(starts) == 1 and starts[0]["parentMessageId"]
        args = [e["delta"] for e in run["events"] if e["type"] == "TOOL_CALL_ARGS"]
        assert args == ['{"ci', 'ty": "Pa', 'ris"}']
        assert texts(r["messages"], "tool") == ['{"city":"Paris","temperature":21}']
        assert texts(r["messages"], "assistant")[-1] == (
            'Done: weather={"city":"Paris","temperature":21}'
        )
        assert r["printed"] == []

    def test_state_delta_reaches_client_state(self, js: Any, client: str) -> None:
        r = scenario(js, client, "note")
        finished_cleanly(r["runs"][0])
        assert r["state"] == {"last_weather": {"city": "Oslo", "temperature": 25}}
        assert r["printed"] == []

    def test_parallel_calls(self, js: Any, client: str) -> None:
        r = scenario(js, client, "parallel")
        finished_cleanly(r["runs"][0])
        assert sorted(texts(r["messages"], "tool")) == [
            '{"city":"Paris","temperature":21}',
            '{"city":"Rome","temperature":25}',
        ]
        assert texts(r["messages"], "assistant")[-1].count("weather=") == 2
        assert r["printed"] == []

    def test_interleaved_parallel_argument_streams(self, js: Any, client: str) -> None:
        r = scenario(js, client, "interleaved")
        run = r["runs"][0]
        finished_cleanly(run)
        calls = [c for m in r["messages"] for c in m.get("toolCalls", [])]
        assert sorted(c["function"]["arguments"] for c in calls) == [
            '{"city": "Paris"}',
            '{"city": "Rome"}',
        ]
        assert sorted(texts(r["messages"], "tool")) == [
            '{"city":"Paris","temperature":21}',
            '{"city":"Rome","temperature":25}',
        ]
        assert r["printed"] == []

    def test_delegate_events_are_attributed_to_the_sub_run(self, js: Any, client: str) -> None:
        r = scenario(js, client, "research")
        first, second = r["runs"]
        finished_cleanly(first)
        events = first["events"]
        parent = next(e for e in events if e["type"] == "TOOL_CALL_START")
        assert parent["toolCallName"] == "summarize" and "subagentRunId" not in parent
        started = next(e for e in events if e["type"] == "SUBAGENT_STARTED")
        assert started["name"] == "summarizer"
        assert started["parentToolCallId"] == parent["toolCallId"]
        sub_run = started["subagentRunId"]
        finished = next(e for e in events if e["type"] == "SUBAGENT_FINISHED")
        assert finished["subagentRunId"] == sub_run and finished["result"] == "Summary: warm."
        inside = events[events.index(started) + 1 : events.index(finished)]
        assert inside and all(e["subagentRunId"] == sub_run for e in inside)
        sub_messages = [m for m in r["messages"] if m.get("subagentRunId") == sub_run]
        assert [m["role"] for m in sub_messages] == ["assistant", "tool", "assistant"]
        assert sub_messages[-1]["content"] == "Summary: warm."
        finished_cleanly(second)  # the delegate's messages did not upset the next run
        assert texts(r["messages"], "assistant")[-1] == "Hello! How can I help?"
        parent_texts = [
            m.get("content")
            for m in r["messages"]
            if m["role"] == "assistant" and "subagentRunId" not in m
        ]
        assert "Done: summarize=Summary: warm." in parent_texts
        assert r["printed"] == []

    def test_progress_is_kept_as_an_activity_message(self, js: Any, client: str) -> None:
        r = scenario(js, client, "deploy")
        run = r["runs"][0]
        finished_cleanly(run)
        snapshots = [e for e in run["events"] if e["type"] == "ACTIVITY_SNAPSHOT"]
        assert len(snapshots) >= 6  # three progress reports, three partial outputs, the end
        activities = [m for m in r["messages"] if m["role"] == "activity"]
        assert len(activities) == 1
        content = activities[0]["content"]
        assert content["status"] == "complete"
        assert content["fraction"] == 1
        assert content["text"] == "stage 3/3"
        assert content["output"] == {"stage": 3}
        assert r["printed"] == []

    def test_failing_tool(self, js: Any, client: str) -> None:
        r = scenario(js, client, "fail")
        finished_cleanly(r["runs"][0])
        tool = next(m for m in r["messages"] if m["role"] == "tool")
        assert tool["content"] == "boom"
        assert texts(r["messages"], "assistant")[-1] == "Done: explode=boom (error)"
        assert r["printed"] == []

    def test_a_policy_denial_reaches_the_model(self, js: Any, client: str) -> None:
        r = scenario(js, client, "purge")
        finished = finished_cleanly(r["runs"][0])
        assert "interrupt" not in json.dumps(finished)  # nobody was asked
        assert texts(r["messages"], "tool") == ["Tool call denied: read-only today"]
        assert texts(r["messages"], "assistant")[-1] == (
            "Done: purge=Tool call denied: read-only today (error)"
        )
        assert r["printed"] == []

    def test_a_failed_call_stays_an_error_in_the_next_request(self, js: Any, client: str) -> None:
        r = scenario(js, client, "fail_recap")
        for run in r["runs"]:
            finished_cleanly(run)
        # the scripted model's answer is what its request held: the client's history
        assert texts(r["messages"], "assistant")[-1] == "Recap: explode=boom (error)"
        assert r["printed"] == []

    def test_invalid_arguments(self, js: Any, client: str) -> None:
        r = scenario(js, client, "badargs")
        finished_cleanly(r["runs"][0])
        assert texts(r["messages"], "tool")[0].startswith("Invalid arguments: malformed JSON")
        assert r["printed"] == []

    def test_run_error(self, js: Any, client: str) -> None:
        r = scenario(js, client, "crash")
        events = r["runs"][0]["events"]
        assert events[-1]["type"] == "RUN_ERROR"
        assert events[-1]["message"] == "the model provider failed"
        assert events[-1]["code"] == "model_error"
        assert not any(e["type"] == "RUN_FINISHED" for e in events)
        assert r["printed"] == []

    def test_front_end_tool_round_trip(self, js: Any, client: str) -> None:
        r = scenario(js, client, "color")
        first, second = r["runs"]
        finished = finished_cleanly(first)
        call_id = next(e for e in first["events"] if e["type"] == "TOOL_CALL_START")["toolCallId"]
        assert not any(e["type"] == "TOOL_CALL_RESULT" for e in first["events"])
        if client == "agui1":
            assert finished["outcome"] == {"type": "success", "pendingToolCallIds": [call_id]}
            assert first["finished"]["pendingToolCallIds"] == [call_id]
        else:  # 0.0.59 rejects 1.0-only outcome fields: none are sent
            assert "outcome" not in finished
        finished_cleanly(second)
        assert texts(r["messages"], "assistant")[-1] == "Done: pick_color=blue"
        assert r["printed"] == []

    def test_context_reaches_the_model_and_usage_the_client(self, js: Any, client: str) -> None:
        r = scenario(js, client, "context")
        finished = finished_cleanly(r["runs"][0])
        assert texts(r["messages"], "assistant")[-1] == (
            "Shown: Context from the application:\n- locale: fr-FR"
        )
        # usage[] on RUN_FINISHED: both clients' schemas declare it (0.0.59 included)
        assert finished["usage"] == [{"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}]
        assert r["printed"] == []

    def test_forwarded_props_reach_the_tools(self, js: Any, client: str) -> None:
        r = scenario(js, client, "props")
        finished_cleanly(r["runs"][0])
        assert json.loads(texts(r["messages"], "tool")[0]) == {"tenant": "acme"}
        assert r["printed"] == []

    def test_a_call_waiting_for_a_front_end_tool_is_not_the_clients(
        self, js: Any, client: str
    ) -> None:
        r = scenario(js, client, "blocked")
        first, second = r["runs"]
        finished = finished_cleanly(first)
        starts = [e for e in first["events"] if e["type"] == "TOOL_CALL_START"]
        color, weather = (e["toolCallId"] for e in starts)
        assert not any(e["type"] == "TOOL_CALL_RESULT" for e in first["events"])
        if client == "agui1":  # only the front end's call: the other one is the server's
            assert finished["outcome"] == {"type": "success", "pendingToolCallIds": [color]}
            assert first["finished"]["pendingToolCallIds"] == [color]
        else:
            assert "outcome" not in finished
        # the client's answer is written where the waiting call reads it, then it runs
        finished_cleanly(second)
        results = [e for e in second["events"] if e["type"] == "TOOL_CALL_RESULT"]
        assert [e["toolCallId"] for e in results] == [weather]
        assert json.loads(results[0]["content"])["city"] == "Oslo"
        assert r["state"]["color"] == "Oslo"
        assert r["printed"] == []

    @pytest.mark.parametrize(
        ("name", "answer"),
        [
            ("approve", "Done: delete_file=deleted /tmp/report.txt"),
            (  # the model is told what it proposed and what ran
                "approve_edit",
                "Done: delete_file=[The user edited the arguments before running: proposed "
                '{"path":"/tmp/report.txt"}, ran {"path":"/tmp/other.txt"}.] '
                "deleted /tmp/other.txt",
            ),
            ("deny", "Done: delete_file=Tool call denied: not today (error)"),
        ],
    )
    def test_approval(self, js: Any, client: str, name: str, answer: str) -> None:
        r = scenario(js, client, name)
        first, second, replay = r["runs"]
        finished = finished_cleanly(first)
        call_id = next(e for e in first["events"] if e["type"] == "TOOL_CALL_START")["toolCallId"]
        assert not any(e["type"] == "TOOL_CALL_RESULT" for e in first["events"])
        (interrupt,) = finished["outcome"]["interrupts"]
        assert finished["outcome"]["type"] == "interrupt"
        assert interrupt["reason"] == "tool_call"
        assert interrupt["toolCallId"] == call_id
        assert interrupt["id"] != call_id
        assert interrupt["message"].endswith("Reason given: clean up")
        assert interrupt["responseSchema"]["required"] == ["approved"]
        assert "arguments" in interrupt["responseSchema"]["properties"]  # the tool allows edits
        finished_cleanly(second)
        assert texts(r["messages"], "assistant")[-1] == answer
        # the same answer a second time is refused: an approval is honoured once
        # (the in-memory ledger has forgotten it; the journal knows it was answered)
        code = "unknown_approval" if "unknown_approval" in replay["error"] else "already_answered"
        assert "409" in replay["error"] and code in replay["error"]
        assert len(r["printed"]) == 1 and code in r["printed"][0]

    def test_disconnect_cancels_the_tool(self, js: Any, client: str, cancelled: list[str]) -> None:
        r = scenario(js, client, "slow")
        assert r["callId"]
        assert wait_cancelled(cancelled, r["callId"])
        finished_cleanly(r["runs"][1])  # the client carries on after the aborted stream
        assert texts(r["messages"], "assistant")[-1] == "Hello! How can I help?"
        assert r["printed"] == []

    def test_client_tool_may_not_replace_a_server_tool(self, js: Any, client: str) -> None:
        r = scenario(js, client, "conflict")
        error = r["runs"][0]["error"]
        assert "HTTP 409" in error
        body = json.loads(error.split(": ", 1)[1])
        assert body["error"]["code"] == "tool_conflict"
        assert "weather" in body["error"]["message"]


# --- AI SDK ------------------------------------------------------------------------------


def chunks(stream: dict[str, Any]) -> list[Any]:
    out = []
    for block in stream["text"].split("\n\n"):
        if block:
            assert block.startswith("data: ")
            data = block[len("data: ") :]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def has_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(has_null(v) for v in value.values())
    if isinstance(value, list):
        return any(has_null(v) for v in value)
    return False


def check_streams(r: dict[str, Any], client: str) -> list[list[Any]]:
    """Every response: the UI message stream headers, no nulls, a valid finish, [DONE]."""
    out = []
    for stream in r["streams"]:
        assert stream["headers"]["x-vercel-ai-ui-message-stream"] == "v1"
        assert stream["headers"]["content-type"] == "text/event-stream"
        parsed = chunks(stream)
        assert parsed[0]["type"] == "start"
        assert parsed[-1] == "[DONE]"
        assert not any(has_null(c) for c in parsed[:-1])
        for c in parsed[:-1]:
            if c["type"] == "finish":
                assert c["finishReason"] in FINISH_REASONS[client]
        out.append(parsed)
    return out


def assistant(r: dict[str, Any]) -> dict[str, Any]:
    last = r["messages"][-1]
    assert last["role"] == "assistant"
    return last


def tool_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in message["parts"] if p["type"].startswith("tool-")]


def final_text(message: dict[str, Any]) -> str:
    return [p["text"] for p in message["parts"] if p["type"] == "text"][-1]


def ok(r: dict[str, Any]) -> None:
    assert r["status"] == "ready"
    assert r["error"] is None
    assert r["errors"] == []
    assert r["printed"] == []


@pytest.mark.parametrize("client", AI)
class TestAISDKClients:
    def test_plain_chat_with_reasoning(self, js: Any, client: str) -> None:
        r = scenario(js, client, "chat")
        ok(r)
        (stream,) = check_streams(r, client)
        parts = assistant(r)["parts"]
        assert [p["type"] for p in parts] == ["step-start", "reasoning", "text"]
        assert parts[1]["text"] == "The user greets me."
        assert parts[2]["text"] == "Hello! How can I help?"
        assert stream[-2] == {"type": "finish", "finishReason": "stop"}

    def test_server_tool_with_streamed_arguments(self, js: Any, client: str) -> None:
        r = scenario(js, client, "weather")
        ok(r)
        (stream,) = check_streams(r, client)
        deltas = [c["inputTextDelta"] for c in stream[:-1] if c["type"] == "tool-input-delta"]
        assert deltas == ['{"ci', 'ty": "Pa', 'ris"}']
        (part,) = tool_parts(assistant(r))
        assert part["type"] == "tool-weather"
        assert part["state"] == "output-available"
        assert part["output"] == {"city": "Paris", "temperature": 21}
        assert final_text(assistant(r)).startswith("Done: weather=")

    def test_state_delta_is_transient_data(self, js: Any, client: str) -> None:
        r = scenario(js, client, "note")
        ok(r)
        check_streams(r, client)
        assert r["data"] == [
            {
                "type": "data-state-delta",
                "data": [
                    {
                        "op": "add",
                        "path": "/last_weather",
                        "value": {"city": "Oslo", "temperature": 25},
                    }
                ],
                "transient": True,
            }
        ]

    def test_parallel_calls(self, js: Any, client: str) -> None:
        r = scenario(js, client, "parallel")
        ok(r)
        check_streams(r, client)
        outputs = [p["output"]["city"] for p in tool_parts(assistant(r))]
        assert sorted(outputs) == ["Paris", "Rome"]
        assert all(p["state"] == "output-available" for p in tool_parts(assistant(r)))

    def test_interleaved_parallel_argument_streams(self, js: Any, client: str) -> None:
        r = scenario(js, client, "interleaved")
        ok(r)
        check_streams(r, client)
        parts = tool_parts(assistant(r))
        assert sorted((p["input"]["city"], p["output"]["temperature"]) for p in parts) == [
            ("Paris", 21),
            ("Rome", 25),
        ]

    def test_delegated_call(self, js: Any, client: str) -> None:
        r = scenario(js, client, "research")
        ok(r)
        check_streams(r, client)
        (part,) = tool_parts(assistant(r))
        assert part["type"] == "tool-summarize" and part["output"] == "Summary: warm."
        assert final_text(assistant(r)) == "Done: summarize=Summary: warm."
        # the sub-run reaches the client as nested progress of the delegating call
        (progress,) = [p for p in assistant(r)["parts"] if p["type"] == "data-tool-progress"]
        sub = progress["data"]["subagent"]
        assert progress["id"] == f"progress-{part['toolCallId']}"
        assert (sub["name"], sub["status"], sub["text"]) == (
            "summarizer",
            "completed",
            "Summary: warm.",
        )
        assert [(c["toolName"], c["state"]) for c in sub["calls"]] == [
            ("weather", "output-available")
        ]

    def test_progress_and_preliminary_outputs(self, js: Any, client: str) -> None:
        r = scenario(js, client, "deploy")
        ok(r)
        (stream,) = check_streams(r, client)
        preliminary = [c["output"] for c in stream[:-1] if c.get("preliminary") is True]
        assert preliminary == [{"stage": 1}, {"stage": 2}, {"stage": 3}]
        progress = [p for p in assistant(r)["parts"] if p["type"] == "data-tool-progress"]
        assert len(progress) == 1  # one part, updated in place
        assert progress[0]["data"]["status"] == "complete"
        assert progress[0]["data"]["fraction"] == 1
        (part,) = tool_parts(assistant(r))
        assert part["state"] == "output-available"
        assert part.get("preliminary") is not True
        assert part["output"] == {"env": "prod", "status": "deployed"}

    def test_failing_tool(self, js: Any, client: str) -> None:
        r = scenario(js, client, "fail")
        ok(r)
        (stream,) = check_streams(r, client)
        (part,) = tool_parts(assistant(r))
        assert part["state"] == "output-error"
        assert part["errorText"] == "boom"
        assert final_text(assistant(r)) == "Done: explode=boom (error)"
        (error,) = [c for c in stream if c != "[DONE]" and c["type"] == "tool-output-error"]
        if client == "ai7":  # the error kind, as the UI part's toolMetadata
            assert part["toolMetadata"] == {"callwright": {"errorKind": "failed"}}
            assert error["toolMetadata"] == part["toolMetadata"]
        else:  # ai 5 and 6 know no toolMetadata: their schemas refuse it
            assert "toolMetadata" not in part and "toolMetadata" not in error

    def test_a_policy_denial_reaches_the_model(self, js: Any, client: str) -> None:
        r = scenario(js, client, "purge")
        ok(r)
        (part,) = tool_parts(assistant(r))
        assert part["state"] == ("output-error" if client == "ai5" else "output-denied")
        assert final_text(assistant(r)) == "Done: purge=Tool call denied: read-only today (error)"

    def test_a_failed_call_stays_an_error_in_the_next_request(self, js: Any, client: str) -> None:
        r = scenario(js, client, "fail_recap")
        ok(r)
        # the scripted model's answer is what its request held: the client's history
        assert final_text(assistant(r)) == "Recap: explode=boom (error)"

    def test_invalid_arguments(self, js: Any, client: str) -> None:
        r = scenario(js, client, "badargs")
        ok(r)
        (stream,) = check_streams(r, client)
        assert [c["type"] for c in stream[:-1]].count("tool-input-error") == 1
        (part,) = tool_parts(assistant(r))
        assert part["state"] == "output-error"
        assert part["errorText"].startswith("Invalid arguments: malformed JSON")

    def test_run_error(self, js: Any, client: str) -> None:
        r = scenario(js, client, "crash")
        check_streams(r, client)
        assert r["status"] == "error"
        assert r["error"] == "[model_error] the model provider failed"
        assert r["printed"] == []

    def test_front_end_tool_round_trip(self, js: Any, client: str) -> None:
        r = scenario(js, client, "color")
        ok(r)
        first, second = check_streams(r, client)
        assert len(r["messages"]) == 2  # the continuation reused the assistant message
        assert first[0]["messageId"] == second[0]["messageId"] == assistant(r)["id"]
        assert first[-2] == {"type": "finish", "finishReason": "tool-calls"}
        assert not any(c["type"].startswith("tool-output") for c in first[:-1])
        (part,) = tool_parts(assistant(r))
        assert part["type"] == "tool-pick_color"
        assert part["state"] == "output-available"
        assert part["output"] == "blue"
        assert final_text(assistant(r)) == "Done: pick_color=blue"

    @pytest.mark.parametrize(("name", "approved"), [("approve", True), ("deny", False)])
    def test_approval(self, js: Any, client: str, name: str, approved: bool) -> None:
        r = scenario(js, client, name)
        if client == "ai5":  # no approval chunks in ai 5: a clear error instead
            assert r["status"] == "error"
            assert r["error"].startswith("[approval_unsupported]")
            assert r["printed"] == []
            return
        ok(r)
        first, _second = check_streams(r, client)
        request = next(c for c in first if c != "[DONE]" and c["type"] == "tool-approval-request")
        assert request["approvalId"] == r["approvalId"] != request["toolCallId"]
        if client == "ai7":
            assert request["reason"] == "clean up"
        else:
            assert "reason" not in request
        assert len(r["messages"]) == 2
        (part,) = tool_parts(assistant(r))
        if approved:
            assert part["state"] == "output-available"
            assert part["output"] == "deleted /tmp/report.txt"
            assert final_text(assistant(r)) == "Done: delete_file=deleted /tmp/report.txt"
        else:
            assert part["state"] == "output-denied"
            # the denial reached the model with its reason
            assert final_text(assistant(r)) == (
                "Done: delete_file=Tool call denied: not today (error)"
            )

    def test_disconnect_cancels_the_tool(self, js: Any, client: str, cancelled: list[str]) -> None:
        r = scenario(js, client, "slow")
        assert r["callId"]
        assert wait_cancelled(cancelled, r["callId"])
        assert r["afterStop"] == {"status": "ready", "error": None}
        ok(r)
        assert final_text(assistant(r)) == "Hello! How can I help?"

    def test_client_tool_may_not_replace_a_server_tool(self, js: Any, client: str) -> None:
        r = scenario(js, client, "conflict")
        assert r["status"] == "error"
        assert json.loads(r["error"])["error"]["code"] == "tool_conflict"
        assert r["streams"] == []
