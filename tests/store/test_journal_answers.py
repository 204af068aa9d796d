"""What the journal keeps of an answer, on both backends: a tool's question (MCP
elicitation, pending kind ``input``) and its answer, checked like an approval; an
approval's ``data`` and ``remember: "thread"``, kept so that a recovered run, another
process and the thread's later runs see them."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from callwright import (
    Agent,
    InputRequest,
    InputRequired,
    ToolContext,
    UserMessage,
    start_journaled,
    tool,
)
from callwright import events as ev
from callwright.messages import ToolResultMessage
from callwright.models import ScriptedModel, call
from callwright.store import (
    Answer,
    PendingRecord,
    Rejected,
    SQLiteJournal,
    SQLJournal,
    open_journal,
)

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
SEEN: list[Any] = []


@tool
async def ask_name(ctx: ToolContext) -> str:
    """Ask the human their name, then greet them."""
    if ctx.answer is None:
        raise InputRequired(InputRequest("Your name?", SCHEMA, state={"handle": "h-42"}))
    SEEN.append(ctx.answer)
    return f"{ctx.answer.action}: {ctx.answer.content}"


@tool(requires_approval=True)
def send(text: str, ctx: ToolContext) -> str:
    """Send a message (asks a human first); the approver may pick the account."""
    approval = ctx.approval
    SEEN.append(approval.data if approval is not None else None)
    return f"sent {text}"


def agent_for(turns: list[list[Any]]) -> Agent:
    return Agent(ScriptedModel(turns), [ask_name, send])


@pytest.fixture(autouse=True)
def forget_what_the_tools_saw() -> None:
    SEEN.clear()


async def drive(
    journal: SQLJournal,
    agent: Agent,
    thread: str,
    request: str,
    prompt: str | None = None,
    answers: list[Answer] | None = None,
    *,
    principal: str = "",
) -> list[Any]:
    new = [UserMessage(prompt)] if prompt else []
    run, recorder = start_journaled(
        journal, agent, thread, request, new, answers or [], principal=principal
    )
    events = []
    async for event in run.events():
        recorder.record(event, b"frame")
        events.append(event)
    return events


async def asked(journal: SQLJournal, thread: str = "t", principal: str = "") -> PendingRecord:
    agent = agent_for([[call("ask_name", {}, id="q1")], ["Hello."]])
    events = await drive(journal, agent, thread, f"{thread}-r1", "greet me", principal=principal)
    assert events[-1].status == "paused"
    [pending] = journal.pending(thread, principal)
    return pending


def answer(pending: PendingRecord, **overrides: Any) -> Answer:
    fields: dict[str, Any] = {
        "call_id": "q1",
        "approval_id": pending.approval_id,
        "action": "accept",
        "content": {"name": "Ada"},
    }
    return Answer("input", **{**fields, **overrides})


# --- a tool's question ---------------------------------------------------------------


async def test_a_question_is_kept_with_its_state_and_the_answer_resumes_the_call(
    journal: SQLJournal,
) -> None:
    pending = await asked(journal)
    assert (pending.kind, pending.call_id, pending.tool_name) == ("input", "q1", "ask_name")
    assert pending.approval_id is not None and pending.approval_id.startswith("inp_")
    assert pending.request is not None
    assert (pending.request.id, pending.request.message) == (pending.approval_id, "Your name?")
    assert pending.request.schema == SCHEMA and pending.request.state == {"handle": "h-42"}
    fresh = open_journal(journal.target)  # another process reads the same question
    try:
        [again] = fresh.pending("t")
        assert again.request == pending.request
        events = await drive(fresh, agent_for([["Hello, Ada."]]), "t", "t-r2", None,
                             [answer(pending)])  # fmt: skip
    finally:
        fresh.close()
    assert events[-1].status == "completed"
    [got] = SEEN
    assert (got.action, got.content) == ("accept", {"name": "Ada"})
    assert got.request.state == {"handle": "h-42"}  # the server's, never the client's
    results = [m for m in journal.history("t") if isinstance(m, ToolResultMessage)]
    assert [(r.call_id, r.content) for r in results] == [("q1", "accept: {'name': 'Ada'}")]
    assert journal.pending("t") == []


async def test_a_declined_question_carries_no_content(journal: SQLJournal) -> None:
    pending = await asked(journal)
    await drive(journal, agent_for([["ok"]]), "t", "t-r2", None,
                [answer(pending, action="decline")])  # fmt: skip
    [got] = SEEN
    assert (got.action, got.content) == ("decline", None)


INPUT_REFUSALS = [
    ("replayed", lambda p: answer(p), "already_answered", 409),
    ("unknown id", lambda p: answer(p, approval_id="inp_forged"), "unknown_approval", 404),
    ("other call", lambda p: answer(p, call_id="q9"), "approval_mismatch", 409),
    ("other tool", lambda p: answer(p, call_id=None, tool_name="send"), "tool_mismatch", 409),
    (
        "a decision for a question",
        lambda p: Answer("approval", "q1", p.approval_id, True),
        "answer_mismatch",
        409,
    ),
    ("no action", lambda p: answer(p, action="maybe"), "invalid_answer", 400),
]


@pytest.mark.parametrize(
    ("name", "make", "code", "status"), INPUT_REFUSALS, ids=[r[0] for r in INPUT_REFUSALS]
)
async def test_refused_answers_to_a_question_change_nothing(
    journal: SQLJournal, name: str, make: Any, code: str, status: int
) -> None:
    pending = await asked(journal)
    agent = agent_for([["ok"], ["ok"]])
    if name == "replayed":
        await drive(journal, agent, "t", "t-r2", None, [make(pending)])
    before = journal.snapshot()
    with pytest.raises(Rejected) as info:
        await drive(journal, agent, "t", "t-r3", None, [make(pending)])
    assert (info.value.code, info.value.status) == (code, status)
    assert journal.snapshot() == before


async def test_an_answer_for_an_approval_is_a_mismatch(journal: SQLJournal) -> None:
    agent = agent_for([[call("send", {"text": "hi"}, id="s1")], ["sent"]])
    await drive(journal, agent, "t", "r1", "send hi")
    [pending] = journal.pending("t")
    before = journal.snapshot()
    with pytest.raises(Rejected) as info:
        await drive(journal, agent, "t", "r2", None, [answer(pending, call_id="s1")])
    assert (info.value.code, info.value.status) == ("answer_mismatch", 409)
    assert journal.snapshot() == before


async def test_a_question_is_answered_only_in_its_thread_by_its_principal(
    journal: SQLJournal,
) -> None:
    alice = await asked(journal, "alice-thread", principal="alice")
    await asked(journal, "other-thread", principal="alice")
    await asked(journal, "mallory-thread", principal="mallory")
    agent = agent_for([["ok"]])
    before = journal.snapshot()
    with pytest.raises(Rejected) as info:
        await drive(journal, agent, "other-thread", "x1", None,
                    [answer(alice, call_id=None)], principal="alice")  # fmt: skip
    assert (info.value.code, info.value.status) == ("wrong_thread", 403)
    with pytest.raises(Rejected) as info:
        await drive(journal, agent, "mallory-thread", "x2", None,
                    [answer(alice, call_id=None)], principal="mallory")  # fmt: skip
    assert (info.value.code, info.value.status) == ("unknown_approval", 404)
    assert journal.snapshot() == before


# --- an approval's data and "for the rest of this thread" ------------------------------


def approve(pending: PendingRecord, **extra: Any) -> Answer:
    return Answer("approval", pending.call_id, pending.approval_id, True, **extra)


async def test_approval_data_reaches_the_tool(journal: SQLJournal) -> None:
    agent = agent_for([[call("send", {"text": "hi"}, id="s1")], ["sent"]])
    await drive(journal, agent, "t", "r1", "send hi")
    [pending] = journal.pending("t")
    await drive(journal, agent, "t", "r2", None, [approve(pending, data={"account": "work"})])
    assert SEEN == [{"account": "work"}]


async def test_a_call_approved_but_not_started_runs_with_the_kept_decision_after_a_crash(
    journal: SQLJournal,
) -> None:
    """The process dies after the approval was taken and before the tool started: the
    recovered run applies the human's decision (data included) instead of asking again."""
    agent = agent_for([[call("send", {"text": "hi"}, id="s1")], ["sent"]])
    await drive(journal, agent, "t", "r1", "send hi")
    [pending] = journal.pending("t")
    run, rec = start_journaled(journal, agent, "t", "r2", [],
                               [approve(pending, data={"account": "work"})])  # fmt: skip
    async for event in run.events():
        if isinstance(event, ev.ApprovalResolved):
            break  # the process stops dead before the tool starts
        rec.record(event, b"frame")
    assert SEEN == []
    fresh = open_journal(journal.target)
    try:
        assert fresh.recover(set()) == [rec.segment.run_id]
        events = await drive(fresh, agent_for([["sent"]]), "t", "r3")
    finally:
        fresh.close()
    assert not any(isinstance(e, ev.ApprovalRequested) for e in events)
    assert SEEN == [{"account": "work"}] and events[-1].status == "completed"
    results = [m for m in journal.history("t") if isinstance(m, ToolResultMessage)]
    assert [(r.call_id, r.content) for r in results] == [("s1", "sent hi")]


async def test_reopen_hands_over_the_kept_decision_and_the_threads_approvals(
    journal_target: str,
) -> None:
    agent = agent_for([[call("send", {"text": "hi"}, id="s1")], ["sent"]])
    first = open_journal(journal_target, owner_id="first", settle_gone=False)
    try:
        await drive(first, agent, "t", "r1", "send hi")
        [pending] = first.pending("t")
        answer_ = approve(pending, data=[1, 2], remember="thread", reason="fine")
        served = first.submit(lambda: None)  # it serves: its segments are owned
        assert served is not None
        await served
        run, rec = start_journaled(first, agent, "t", "r2", [], [answer_])
        async for event in run.events():
            if isinstance(event, ev.ApprovalResolved):
                break
            rec.record(event, b"frame")
    finally:
        first.close()
    second = open_journal(journal_target, owner_id="second", settle_gone=False)
    try:
        started = second.reopen("r2", set())
        assert started is not None
        [(call_id, decision)] = started.decisions.items()
        assert call_id == "s1" and decision.approved and decision.reason == "fine"
        assert (decision.data, decision.remember) == ([1, 2], "thread")
        assert started.thread_approvals == ["send"]
    finally:
        second.close()


async def test_remember_thread_is_kept_per_thread_and_principal(journal: SQLJournal) -> None:
    agent = agent_for([[call("send", {"text": "a"}, id="s1")], ["sent"]])
    await drive(journal, agent, "t", "r1", "send a", principal="p")
    [pending] = journal.pending("t", "p")
    await drive(journal, agent, "t", "r2", None, [approve(pending, remember="thread")],
                principal="p")  # fmt: skip
    fresh = open_journal(journal.target)  # a restart, or another replica
    try:
        again = agent_for([[call("send", {"text": "b"}, id="s2")], ["sent again"]])
        events = await drive(fresh, again, "t", "r3", "send b", principal="p")
        started = fresh.begin("other", "o1", [UserMessage("hi")], [], {}, principal="p")
    finally:
        fresh.close()
    resolved = [e for e in events if isinstance(e, ev.ApprovalResolved)]
    assert [(e.call_id, e.approved, e.automatic) for e in resolved] == [("s2", True, True)]
    assert events[-1].status == "completed" and SEEN == [None, None]
    assert started.thread_approvals == []  # another thread asks again


async def test_a_denial_or_a_plain_approval_is_not_remembered(journal: SQLJournal) -> None:
    agent = agent_for([[call("send", {"text": "a"}, id="s1"), call("send", {"text": "b"},
                       id="s2")], ["done"]])  # fmt: skip
    await drive(journal, agent, "t", "r1", "send both")
    first, second = journal.pending("t")
    denied = Answer("approval", first.call_id, first.approval_id, False, remember="thread")
    await drive(journal, agent, "t", "r2", None, [denied, approve(second)])
    started = journal.begin("t", "r3", [UserMessage("again")], [], {})
    assert started.thread_approvals == []


async def test_a_bad_remember_is_refused(journal: SQLJournal) -> None:
    agent = agent_for([[call("send", {"text": "a"}, id="s1")], ["sent"]])
    await drive(journal, agent, "t", "r1", "send a")
    [pending] = journal.pending("t")
    with pytest.raises(Rejected) as info:
        await drive(journal, agent, "t", "r2", None, [approve(pending, remember="forever")])
    assert (info.value.code, info.value.status) == ("invalid_answer", 400)


def test_an_older_journal_gets_the_new_columns(journal_target: str) -> None:
    """A file or database made before questions and kept answers: opening it adds them."""
    open_journal(journal_target).close()
    if journal_target.startswith("postgres"):
        import psycopg

        with psycopg.connect(journal_target, autocommit=True) as db:
            for column in NEW_COLUMNS:
                db.execute(f"ALTER TABLE pending DROP COLUMN {column}")
        open_journal(journal_target).close()
        with psycopg.connect(journal_target) as db:
            rows = db.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'pending'"
            ).fetchall()
        columns = {name for (name,) in rows}
    else:
        db = sqlite3.connect(journal_target)
        for column in NEW_COLUMNS:
            db.execute(f"ALTER TABLE pending DROP COLUMN {column}")
        db.commit()
        db.close()
        SQLiteJournal(journal_target).close()
        db = sqlite3.connect(journal_target)
        columns = {row[1] for row in db.execute("PRAGMA table_info(pending)")}
        db.close()
    assert set(NEW_COLUMNS) <= columns


NEW_COLUMNS = ("request", "answer", "remember")


async def test_a_question_whose_state_is_not_json_stops_the_run_saying_so(
    journal: SQLJournal,
) -> None:
    @tool
    def odd() -> str:
        """Asks with a state only a process could keep."""
        raise InputRequired(InputRequest("?", SCHEMA, state=object()))

    agent = Agent(ScriptedModel([[call("odd", {}, id="o1")], ["never"]]), [odd])
    with pytest.raises(TypeError, match="is not JSON"):
        await drive(journal, agent, "t", "r1", "go")


@tool(requires_approval=True)
async def send_asking(ctx: ToolContext) -> str:
    """Asks a human first, then asks them which account to use."""
    if ctx.answer is None:
        raise InputRequired(InputRequest("Which account?", SCHEMA))
    return f"sent via {ctx.answer.content}"


async def test_a_question_after_a_remembered_approval_keeps_the_grant(
    journal: SQLJournal,
) -> None:
    """The call's question takes its approval's place as the call's pending row: the
    human's "for the rest of this thread" stays."""
    turns = [[call("send_asking", {}, id="a1")], ["sent"], [call("send_asking", {}, id="a2")]]
    agent = Agent(ScriptedModel([*turns, ["asked"]]), [send_asking])
    await drive(journal, agent, "t", "r1", "send")
    [approval] = journal.pending("t")
    await drive(journal, agent, "t", "r2", None, [approve(approval, remember="thread")])
    [question] = journal.pending("t")
    assert question.kind == "input" and question.call_id == "a1"
    await drive(journal, agent, "t", "r3", None, [answer(question, call_id="a1")])
    events = await drive(journal, agent, "t", "r4", "send again")
    resolved = [e for e in events if isinstance(e, ev.ApprovalResolved)]
    assert [(e.call_id, e.automatic) for e in resolved] == [("a2", True)]
    assert [p.kind for p in journal.pending("t")] == ["input"]
