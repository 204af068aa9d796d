"""The SQLite run journal at the library level: pause, answer, refuse, recover."""

from __future__ import annotations

from typing import Any

import pytest

from callwright import Agent, ToolResultMessage, UserMessage, start_journaled, tool
from callwright import events as ev
from callwright.models import ScriptedModel, call
from callwright.store import (
    Answer,
    Rejected,
    SQLJournal,
    open_journal,
)

RAN: list[str] = []


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    RAN.append(f"delete {path}")
    return f"deleted {path}"


@tool(requires_approval=True, allow_edits=True)
def pay(amount: int) -> str:
    """Pay."""
    RAN.append(f"pay {amount}")
    return f"paid {amount}"


def agent_for(turns: list[list[Any]]) -> Agent:
    return Agent(ScriptedModel(turns), [delete_file, pay])


async def drive(
    journal: SQLJournal,
    agent: Agent,
    thread: str,
    request: str,
    prompt: str | None = None,
    answers: list[Answer] | None = None,
) -> list[Any]:
    new = [UserMessage(prompt)] if prompt else []
    run, recorder = start_journaled(journal, agent, thread, request, new, answers or [])
    events = []
    async for event in run.events():
        recorder.record(event, repr(event).encode())
        events.append(event)
    return events


async def test_pause_records_exactly_what_was_asked_then_approval_completes(
    journal: SQLJournal,
) -> None:
    RAN.clear()
    agent = agent_for([[call("delete_file", {"path": "a.txt"}, id="c1")], ["Deleted."]])
    events = await drive(journal, agent, "t1", "r1", "delete a.txt")
    assert events[-1].status == "paused"
    [pending] = journal.pending("t1")
    assert (pending.call_id, pending.tool_name, pending.arguments) == (
        "c1",
        "delete_file",
        {"path": "a.txt"},
    )
    approval = Answer("approval", "c1", pending.approval_id, approved=True)
    events = await drive(journal, agent, "t1", "r2", answers=[approval])
    assert events[-1].status == "completed"
    assert RAN == ["delete a.txt"]
    assert journal.pending("t1") == []
    history = journal.history("t1")
    assert [type(m).__name__ for m in history] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
    ]
    assert journal.run_status(pending.run_id) == "completed"
    ops = journal.operations(pending.run_id)
    assert [(o["name"], o["status"]) for o in ops] == [
        ("model", "completed"),
        ("tool:delete_file", "completed"),
        ("model", "completed"),
    ]
    assert ops[1]["output"]["content"] == "deleted a.txt"
    assert len({o["idempotency_key"] for o in ops}) == 3
    offsets = [o for o, _ in journal.events_after("r2", 0)]
    assert offsets == list(range(1, len(offsets) + 1))


async def paused(journal: SQLJournal, thread: str = "t1") -> tuple[Agent, Any]:
    agent = agent_for([[call("delete_file", {"path": "a.txt"}, id="c1")], ["Deleted."]])
    await drive(journal, agent, thread, f"{thread}-r1", "delete a.txt")
    [pending] = journal.pending(thread)
    return agent, pending


REFUSALS = [
    ("replayed", lambda p: Answer("approval", "c1", p.approval_id, True), "already_answered"),
    ("forged id", lambda p: Answer("approval", "c1", "apr_forged", True), "unknown_approval"),
    (
        "forged id, unknown call",
        lambda p: Answer("approval", "zz", "apr_x", True),
        "unknown_approval",
    ),
    ("other call", lambda p: Answer("approval", "c9", p.approval_id, True), "approval_mismatch"),
    (
        "other tool",
        lambda p: Answer("approval", None, p.approval_id, True, tool_name="pay"),
        "tool_mismatch",
    ),
    (
        "edited arguments",
        lambda p: Answer("approval", "c1", p.approval_id, True, arguments={"path": "/etc/passwd"}),
        "arguments_changed",
    ),
    ("unknown client call", lambda p: Answer("client", "c404", result="x"), "unknown_call"),
    ("approval as client result", lambda p: Answer("client", "c1", result="x"), "unknown_call"),
]


@pytest.mark.parametrize(("name", "make", "code"), REFUSALS, ids=[r[0] for r in REFUSALS])
async def test_refused_answers_change_nothing(
    journal: SQLJournal, name: str, make: Any, code: str
) -> None:
    agent, pending = await paused(journal)
    if name == "replayed":
        await drive(journal, agent, "t1", "r2", answers=[make(pending)])
    before = journal.snapshot()
    with pytest.raises(Rejected) as info:
        await drive(journal, agent, "t1", "r3", answers=[make(pending)])
    assert info.value.code == code
    assert 400 <= info.value.status < 500
    assert journal.snapshot() == before


async def test_cross_thread_approval_is_refused(journal: SQLJournal) -> None:
    _, pending = await paused(journal, "alice")
    agent, _ = await paused(journal, "mallory")
    before = journal.snapshot()
    with pytest.raises(Rejected) as info:
        await drive(
            journal,
            agent,
            "mallory",
            "m2",
            answers=[Answer("approval", None, pending.approval_id, True)],
        )
    assert (info.value.code, info.value.status) == ("wrong_thread", 403)
    assert journal.snapshot() == before


async def test_edits_validated_where_allowed(journal: SQLJournal) -> None:
    RAN.clear()
    agent = agent_for([[call("pay", {"amount": 500}, id="p1")], ["Paid."]])
    await drive(journal, agent, "t", "r1", "pay")
    [pending] = journal.pending("t")
    before = journal.snapshot()
    bad = Answer("approval", "p1", pending.approval_id, True, arguments={"amount": "lots"})
    with pytest.raises(Rejected) as info:
        await drive(journal, agent, "t", "r2", answers=[bad])
    assert (info.value.code, info.value.status) == ("invalid_edit", 422)
    assert journal.snapshot() == before
    good = Answer("approval", "p1", pending.approval_id, True, arguments={"amount": 150})
    events = await drive(journal, agent, "t", "r3", answers=[good])
    assert RAN == ["pay 150"] and events[-1].status == "completed"


async def test_client_results_are_taken_only_for_issued_calls(journal: SQLJournal) -> None:
    from callwright import Tool

    confirm = Tool.from_schema({"name": "confirmAction", "parameters": {"type": "object"}})
    agent = Agent(ScriptedModel([[call("confirmAction", {"action": "x"}, id="k1")], ["ok"]]))
    run, rec = start_journaled(
        journal, agent, "t", "r1", [UserMessage("go")], [], client_tools=[confirm]
    )
    async for e in run.events():
        rec.record(e)
    [pending] = journal.pending("t")
    assert pending.kind == "client"
    run, rec = start_journaled(
        journal,
        agent,
        "t",
        "r2",
        [],
        [Answer("client", "k1", result="true")],
        client_tools=[confirm],
    )
    async for e in run.events():
        rec.record(e)
    results = [m for m in journal.history("t") if isinstance(m, ToolResultMessage)]
    assert [(r.call_id, r.content) for r in results] == [("k1", "true")]


async def test_a_new_message_instead_of_an_answer_supersedes_the_pending_call(
    journal: SQLJournal,
) -> None:
    RAN.clear()
    agent = agent_for([[call("delete_file", {"path": "a.txt"}, id="c1")], ["Fine, not deleting."]])
    await drive(journal, agent, "t", "r1", "delete a.txt")
    events = await drive(journal, agent, "t", "r2", "actually, don't")
    assert RAN == []
    assert journal.pending("t") == []
    skipped = [r for r in events if isinstance(r, ev.ToolCallResult)]
    assert skipped[0].error_kind == "skipped"


async def test_recovery_replays_completed_interrupts_started_reruns_idempotent(
    journal: SQLJournal,
) -> None:
    calls: list[str] = []

    @tool
    def done_before_crash() -> str:
        """Done."""
        calls.append("done")
        return "finished output"

    @tool
    def running_at_crash() -> str:
        """Running."""
        calls.append("running")
        return "never returns"

    @tool(idempotent=True)
    def safe_to_retry() -> str:
        """Idempotent."""
        calls.append("retry")
        return "retried"

    turn = [
        call("done_before_crash", id="a"),
        call("running_at_crash", id="b"),
        call("safe_to_retry", id="c"),
    ]
    agent = Agent(
        ScriptedModel([turn, ["after recovery"]]),
        [done_before_crash, running_at_crash, safe_to_retry],
        strategy="sequential",
    )
    run, rec = start_journaled(journal, agent, "t", "r1", [UserMessage("go")], [])
    # simulate a crash: journal events until b and c have started, then stop dead
    started: set[str] = set()
    async for e in run.events():
        rec.record(e)
        if isinstance(e, ev.ToolExecutionStart):
            started.add(e.call_id)
        if isinstance(e, ev.ToolCallResult) and e.call_id == "a":
            rec.record(ev.ToolExecutionStart("b", "running_at_crash"))
            rec.record(ev.ToolExecutionStart("c", "safe_to_retry"))
            break
    journal_run = rec.segment.run_id
    assert journal.run_status(journal_run) == "running"
    history_before = journal.history("t")
    assert [type(m).__name__ for m in history_before] == ["UserMessage"]  # the step never committed

    fresh = open_journal(journal.target)  # a new process
    assert fresh.recover({"safe_to_retry"}) == [journal_run]
    calls.clear()
    run2, rec2 = start_journaled(fresh, agent, "t", "r2", [], [])
    async for e in run2.events():
        rec2.record(e)
    assert calls == ["retry"]  # a replayed, b in doubt, c run again
    results = {m.call_id: m for m in fresh.history("t") if isinstance(m, ToolResultMessage)}
    assert results["a"].content == "finished output"
    assert results["b"].is_error and results["b"].content.startswith("In doubt:")
    assert results["c"].content == "retried"
    assert fresh.run_status(journal_run) == "completed"
    fresh.close()


def test_ping_reads_the_database_and_fails_once_closed(journal_target: str) -> None:
    journal = open_journal(journal_target)
    journal.ping()
    journal.close()
    with pytest.raises(RuntimeError, match="the journal is closed"):
        journal.ping()
