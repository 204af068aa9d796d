"""A side-effecting call that started and never reported is in doubt, not merely
interrupted: the journal records it (on SQLite and Postgres), the model is told the
outcome is unknown, the resumed run reports it on the wire, and a tool's ``reconcile``
hook turns it into the real result. Idempotent tools still run again."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _sse import frames
from callwright import Agent, InDoubt, ToolContext, start_journaled, tool
from callwright import events as ev
from callwright.call import idempotency_key, is_in_doubt
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ScriptedModel, call
from callwright.server import create_app
from callwright.store import Answer, SQLJournal, open_journal
from live_server import Server


async def crash_mid_tool(journal: SQLJournal, agent: Agent) -> str:
    """Run ``charge`` until its tool has charged, then stop as a killed process would (the
    operation row says started, nothing more); returns the run id."""
    run, rec = start_journaled(journal, agent, "t", "r1", [UserMessage("charge 5")], [])
    async for e in run.events():
        rec.record(e, b"frame")
        if isinstance(e, ev.ToolProgress):
            break
    return rec.segment.run_id


def charging_agent(charges: list[str], reconcile: Any = None) -> tuple[Agent, ScriptedModel]:
    @tool(reconcile=reconcile)
    async def charge(amount: int, ctx: ToolContext) -> str:
        """Charge the card."""
        charges.append(ctx.idempotency_key)
        ctx.progress("charged")
        await asyncio.Event().wait()  # the process dies before the tool reports
        return f"charged {amount}"

    model = ScriptedModel([[call("charge", {"amount": 5}, id="c1")], ["noted"]])
    return Agent(model, [charge]), model


async def resume(journal: SQLJournal, agent: Agent) -> list[Any]:
    run, rec = start_journaled(journal, agent, "t", "r2", [], [])
    events = []
    async for e in run.events():
        rec.record(e, b"frame")
        events.append(e)
    return events


def key_for(arguments: dict[str, Any]) -> str:
    return idempotency_key("t", "c1", arguments)


async def test_a_started_call_is_in_doubt_in_the_journal_and_for_the_model(
    journal: SQLJournal,
) -> None:
    charges: list[str] = []
    agent, model = charging_agent(charges)
    run_id = await crash_mid_tool(journal, agent)
    assert charges == [key_for({"amount": 5})]  # the key the tool had
    fresh = open_journal(journal.target)
    try:
        assert fresh.recover(set()) == [run_id]
        [op] = [o for o in fresh.operations(run_id) if o["name"] != "model"]
        assert op["status"] == "in_doubt"
        last = fresh.history("t")[-1]
        assert isinstance(last, ToolResultMessage) and last.is_error
        assert is_in_doubt(last.content) and "Do not call it again" in last.content
        events = await resume(fresh, agent)
        [result] = [e for e in events if isinstance(e, ev.ToolCallResult)]
        assert (result.state, result.error_kind) == ("output-error", "in-doubt")
        assert result.content == last.content
        sent = model.requests[-1].messages[-1]
        assert isinstance(sent, ToolResultMessage) and sent.content == last.content
        [op] = [o for o in fresh.operations(run_id) if o["name"] != "model"]
        assert op["status"] == "in_doubt"  # reported, and still recorded as in doubt
        assert charges == [key_for({"amount": 5})]  # not run again
    finally:
        fresh.close()


async def test_reconcile_turns_in_doubt_into_the_real_result(journal: SQLJournal) -> None:
    charges: list[str] = []
    asked: list[tuple[str, dict[str, Any]]] = []

    async def reconcile(key: str, arguments: dict[str, Any]) -> str | None:
        asked.append((key, arguments))
        return f"charged {arguments['amount']}" if key in charges else None

    agent, model = charging_agent(charges, reconcile)
    run_id = await crash_mid_tool(journal, agent)
    fresh = open_journal(journal.target)
    try:
        fresh.recover(set())
        events = await resume(fresh, agent)
        assert asked == [(key_for({"amount": 5}), {"amount": 5})]
        [result] = [e for e in events if isinstance(e, ev.ToolCallResult)]
        assert (result.state, result.output) == ("output-available", "charged 5")
        sent = model.requests[-1].messages[-1]
        assert isinstance(sent, ToolResultMessage)
        assert (sent.content, sent.is_error) == ("charged 5", False)
        results = [m for m in fresh.history("t") if isinstance(m, ToolResultMessage)]
        assert [(m.content, m.is_error) for m in results] == [("charged 5", False)]
        assert len(charges) == 1
    finally:
        fresh.close()
    assert run_id


async def test_a_reconcile_that_cannot_tell_or_fails_keeps_the_call_in_doubt(
    journal: SQLJournal,
) -> None:
    def reconcile(key: str, arguments: dict[str, Any]) -> str | None:
        raise ConnectionError("the payments service is down")

    agent, model = charging_agent([], reconcile)
    await crash_mid_tool(journal, agent)
    fresh = open_journal(journal.target)
    try:
        fresh.recover(set())
        events = await resume(fresh, agent)
        [result] = [e for e in events if isinstance(e, ev.ToolCallResult)]
        assert result.error_kind == InDoubt.kind
        sent = model.requests[-1].messages[-1]
        assert isinstance(sent, ToolResultMessage) and is_in_doubt(sent.content)
    finally:
        fresh.close()


async def test_an_idempotent_tool_runs_again_with_the_same_key(journal: SQLJournal) -> None:
    keys: list[str] = []

    @tool(idempotent=True)
    async def charge(amount: int, ctx: ToolContext) -> str:
        """Charge the card."""
        keys.append(ctx.idempotency_key)
        ctx.progress("charged")
        if len(keys) == 1:
            await asyncio.Event().wait()  # the process dies before the tool reports
        return f"charged {amount}"

    agent = Agent(ScriptedModel([[call("charge", {"amount": 5}, id="c1")], ["noted"]]), [charge])
    await crash_mid_tool(journal, agent)
    fresh = open_journal(journal.target)
    try:
        fresh.recover(set())
        events = await resume(fresh, agent)
        [result] = [e for e in events if isinstance(e, ev.ToolCallResult)]
        assert result.state == "output-available"
        assert keys == [key_for({"amount": 5})] * 2
    finally:
        fresh.close()


async def test_an_edited_call_runs_and_is_reconciled_with_the_key_of_what_ran(
    journal: SQLJournal,
) -> None:
    """An approver cut the charge from 500 to 150: the tool ran with the key of 150, and
    after a crash ``reconcile`` is asked about that key and those arguments, not the
    model's; the model is told what was proposed and what ran."""
    charges: list[str] = []
    asked: list[tuple[str, dict[str, Any]]] = []

    def reconcile(key: str, arguments: dict[str, Any]) -> str | None:
        asked.append((key, arguments))
        return f"charged {arguments['amount']}" if key in charges else None

    @tool(requires_approval=True, allow_edits=True, reconcile=reconcile)
    async def charge(amount: int, ctx: ToolContext) -> str:
        """Charge the card."""
        charges.append(ctx.idempotency_key)
        ctx.progress("charged")
        await asyncio.Event().wait()  # the process dies before the tool reports
        return f"charged {amount}"

    model = ScriptedModel([[call("charge", {"amount": 500}, id="c1")], ["noted"]])
    agent = Agent(model, [charge])
    run, rec = start_journaled(journal, agent, "t", "r1", [UserMessage("charge")], [])
    async for e in run.events():
        rec.record(e, b"frame")
    [pending] = journal.pending("t")
    edit = Answer("approval", "c1", pending.approval_id, True, arguments={"amount": 150})
    run, rec = start_journaled(journal, agent, "t", "r2", [], [edit])
    async for e in run.events():
        rec.record(e, b"frame")
        if isinstance(e, ev.ToolProgress):
            break
    assert charges == [key_for({"amount": 150})]
    assert key_for({"amount": 150}) != key_for({"amount": 500})
    fresh = open_journal(journal.target)
    try:
        fresh.recover(set())
        last = fresh.history("t")[-1]
        assert isinstance(last, ToolResultMessage) and is_in_doubt(last.content)
        assert last.content.startswith(
            '[The user edited the arguments before running: proposed {"amount":500}, '
            'ran {"amount":150}.] '
        )
        run, rec = start_journaled(fresh, agent, "t", "r3", [], [])
        events = [e async for e in run.events()]
        assert asked == [(key_for({"amount": 150}), {"amount": 150})]
        [result] = [e for e in events if isinstance(e, ev.ToolCallResult)]
        assert (result.state, result.output) == ("output-available", "charged 150")
        sent = model.requests[-1].messages[-1]
        assert isinstance(sent, ToolResultMessage) and not sent.is_error
        assert sent.content == (
            '[The user edited the arguments before running: proposed {"amount":500}, '
            'ran {"amount":150}.] charged 150'
        )
        assert len(charges) == 1
    finally:
        fresh.close()


def test_the_key_is_stable_and_differs_with_the_arguments() -> None:
    assert idempotency_key("t", "c1", {"a": 1, "b": 2}) == idempotency_key(
        "t", "c1", {"b": 2, "a": 1}
    )
    assert idempotency_key("t", "c1", {"a": 1}) != idempotency_key("t", "c1", {"a": 2})
    assert idempotency_key("t", "c1", {"a": 1}) != idempotency_key("t", "c2", {"a": 1})


# --- both wires, over HTTP ----------------------------------------------------------


@pytest.fixture
def opened() -> Iterator[list[SQLJournal]]:
    journals: list[SQLJournal] = []
    yield journals
    for journal in journals:
        journal.close()


def served_after_a_crash(
    path: str, opened: list[SQLJournal], reconcile: Any = None
) -> tuple[Any, ScriptedModel]:
    """A thread ``t`` whose ``charge`` call a crash left in doubt, and the app a restarted
    server serves it with."""
    charges: list[str] = []
    journal = open_journal(path)
    agent, _ = charging_agent(charges, reconcile)
    asyncio.run(crash_mid_tool(journal, agent))
    journal.close()
    model = ScriptedModel(lambda request: ["noted"])
    again, _ = charging_agent(charges, reconcile)
    # the crashed run has no live owner: the first request on its thread settles it
    opened.append(open_journal(path))
    return create_app(Agent(model, list(again.toolbox)), journal=opened[-1]), model


def test_agui_shows_the_call_in_doubt_and_what_the_user_can_do(
    tmp_path: Path, opened: list[SQLJournal]
) -> None:
    app, model = served_after_a_crash(str(tmp_path / "runs.db"), opened)
    with Server(app) as server:
        body = {"threadId": "t", "runId": "r3", "messages": [], "tools": [], "context": [],
                "state": {}, "forwardedProps": {}}  # fmt: skip
        response = httpx.post(server.url + "/agui", json=body, timeout=30)
    assert response.status_code == 200, response.text
    [result] = [e for e in frames(response.text) if e["type"] == "TOOL_CALL_RESULT"]
    assert result["toolCallId"] == "c1"
    assert result["metadata"]["callwright"] == {"state": "output-error", "errorKind": "in-doubt"}
    assert is_in_doubt(result["content"]) and "check the external system" in result["content"]
    sent = model.requests[-1].messages[-1]
    assert isinstance(sent, ToolResultMessage) and sent.content == result["content"]


def test_the_ai_sdk_stream_shows_the_call_in_doubt(
    tmp_path: Path, opened: list[SQLJournal]
) -> None:
    app, _ = served_after_a_crash(str(tmp_path / "runs.db"), opened)
    user = {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "did it work?"}]}
    with Server(app) as server:
        body = {"id": "t", "messages": [user], "trigger": "submit-message"}
        response = httpx.post(server.url + "/api/chat", json=body, timeout=30)
    assert response.status_code == 200, response.text
    [error] = [e for e in frames(response.text) if e["type"] == "tool-output-error"]
    assert error["toolCallId"] == "c1"
    assert is_in_doubt(error["errorText"]) and "Do not call it again" in error["errorText"]


def test_over_http_a_reconciled_call_shows_its_real_result(
    tmp_path: Path, opened: list[SQLJournal]
) -> None:
    def reconcile(key: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"charged": arguments["amount"], "key": key}

    app, model = served_after_a_crash(str(tmp_path / "runs.db"), opened, reconcile)
    with Server(app) as server:
        body = {"threadId": "t", "runId": "r3", "messages": [], "tools": [], "context": [],
                "state": {}, "forwardedProps": {}}  # fmt: skip
        response = httpx.post(server.url + "/agui", json=body, timeout=30)
    [result] = [e for e in frames(response.text) if e["type"] == "TOOL_CALL_RESULT"]
    assert "metadata" not in result
    assert json.loads(result["content"]) == {"charged": 5, "key": key_for({"amount": 5})}
    assert model.requests[-1].messages[-1].content == result["content"]  # type: ignore[union-attr]
