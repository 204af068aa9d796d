"""A run's own model settings are journaled with the run: its later segments (resumed after
an approval, continued by another process) ask the provider with them, not with the
agent's. Asserted on what the Responses fake server received, on both journal backends."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from callwright import Agent, ConfigurationError, ModelSettings, start_journaled, tool
from callwright import events as ev
from callwright.durable._segment import SegmentSpec, continued_run
from callwright.messages import UserMessage
from callwright.models._retry import RetryPolicy
from callwright.models.openai_responses import OpenAIResponsesModel
from callwright.store import Answer, SQLJournal, open_journal, recorder_for
from models._responses import Stream

FAST = RetryPolicy(max_attempts=1, base_delay=0.01)
AGENTS = ModelSettings(temperature=0.1, max_tokens=10)
RUNS = ModelSettings(temperature=0.7, top_p=0.5, extra={"seed": 3, "metadata": {"k": "v"}})
RAN: list[str] = []


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    RAN.append(path)
    return f"deleted {path}"


def agent(replay: Any) -> Agent:
    model = OpenAIResponsesModel("gpt-test", base_url=replay.url + "/v1", api_key="k", retry=FAST)
    return Agent(model, [delete_file], settings=AGENTS)


def calls_delete(replay: Any) -> None:
    first = Stream().created()
    first.call("fc_1", "call_1", "delete_file", ['{"path": ', '"a.txt"}'])
    first.completed().send(replay)


def answers(replay: Any, text: str = "Deleted.") -> None:
    second = Stream("resp_2").created()
    second.message("msg_2", [text])
    second.completed().send(replay)


def the_runs_settings(body: dict[str, Any]) -> None:
    """The run's settings over the agent's, field by field."""
    assert body["temperature"] == 0.7 and body["top_p"] == 0.5
    assert body["max_output_tokens"] == 10  # the agent's, which the run left alone
    assert body["seed"] == 3 and body["metadata"] == {"k": "v"}


@pytest.fixture
def journals(journal_target: str) -> Iterator[Callable[..., SQLJournal]]:
    opened: list[SQLJournal] = []

    def make(**options: Any) -> SQLJournal:
        journal = open_journal(journal_target, **options)
        opened.append(journal)
        return journal

    yield make
    for journal in opened:
        journal.close()


async def play(journal: SQLJournal, a: Agent, request: str, **kw: Any) -> list[Any]:
    prompt = kw.pop("prompt", None)
    new = [UserMessage(prompt)] if prompt else []
    run, recorder = start_journaled(journal, a, "t1", request, new, kw.pop("answers", []), **kw)
    events = []
    async for event in run.events():
        recorder.record(event, b"frame")
        events.append(event)
    return events


async def test_a_run_resumed_after_approval_keeps_its_settings(
    replay: Any, journals: Callable[..., SQLJournal]
) -> None:
    RAN.clear()
    journal = journals()
    calls_delete(replay)
    answers(replay)
    a = agent(replay)
    events = await play(journal, a, "r1", prompt="delete a.txt", settings=RUNS)
    assert getattr(events[-1], "status", events[-1]) == "paused"
    [pending] = journal.pending("t1")
    # the resume gives no settings: the journal has the run's
    approval = Answer("approval", "call_1", pending.approval_id, approved=True)
    events = await play(journal, a, "r2", answers=[approval])
    assert events[-1].status == "completed" and RAN == ["a.txt"]
    assert len(replay.requests) == 2
    for sent in replay.requests:
        the_runs_settings(sent["json"])

    # a new run on the thread is a new run: the agent's settings again
    answers(replay, "Hi.")
    await play(journal, a, "r3", prompt="hi")
    body = replay.requests[2]["json"]
    assert body["temperature"] == 0.1 and "top_p" not in body and "seed" not in body


async def test_a_resume_given_settings_overrides_the_runs_field_by_field(
    replay: Any, journals: Callable[..., SQLJournal]
) -> None:
    journal = journals()
    calls_delete(replay)
    answers(replay)
    a = agent(replay)
    await play(journal, a, "r1", prompt="delete a.txt", settings=RUNS)
    [pending] = journal.pending("t1")
    approval = Answer("approval", "call_1", pending.approval_id, approved=True)
    await play(journal, a, "r2", answers=[approval], settings=ModelSettings(top_p=0.2))
    body = replay.requests[1]["json"]
    assert (body["temperature"], body["top_p"], body["seed"]) == (0.7, 0.2, 3)


def serving(journal: SQLJournal) -> None:
    """Make the journal an owner, as a server's first write does."""

    async def written() -> None:
        done = journal.submit(lambda: None)
        assert done is not None
        await done

    waiter = threading.Thread(target=asyncio.run, args=(written(),))
    waiter.start()
    waiter.join(30)
    assert journal.owner is not None


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    RAN.append(key)
    return "found"


async def test_a_run_continued_by_another_process_keeps_its_settings(
    replay: Any, journals: Callable[..., SQLJournal]
) -> None:
    RAN.clear()
    first = Stream().created()
    first.call("fc_1", "call_1", "lookup", ['{"key": "k1"}'])
    first.completed().send(replay)
    answers(replay, "Found.")
    model = OpenAIResponsesModel("gpt-test", base_url=replay.url + "/v1", api_key="k", retry=FAST)
    a = Agent(model, [lookup], settings=AGENTS)

    gone = journals(owner_id="gone")
    serving(gone)
    run, recorder = start_journaled(gone, a, "t1", "r1", [UserMessage("look")], [], settings=RUNS)
    async for event in run.events():  # the process dies once the call is planned
        if isinstance(event, ev.ToolExecutionStart):
            break
        recorder.record(event, b"frame")
    gone.close()
    assert RAN == []

    heir = journals(owner_id="heir", settle_gone=False)
    assert heir.claim("gone")
    started = heir.reopen("r1", set())
    assert started is not None and started.settings == RUNS
    again = continued_run(a, started, SegmentSpec("r1", "t1"))
    recorder = recorder_for(heir, started, again)
    async for event in again.events():
        recorder.record(event, b"more")
    assert RAN == ["k1"] and again.result is not None and again.result.output == "Found."
    assert len(replay.requests) == 2
    for sent in replay.requests:
        the_runs_settings(sent["json"])


def test_settings_the_journal_cannot_keep_are_refused_before_any_write(
    replay: Any, tmp_path: Any
) -> None:
    journal = open_journal(str(tmp_path / "runs.db"))
    try:
        unkept = ModelSettings(extra={"callback": object()})
        with pytest.raises(ConfigurationError, match="extra must hold JSON values"):
            start_journaled(journal, agent(replay), "t1", "r1", [UserMessage("hi")], [],
                            settings=unkept)  # fmt: skip
        assert journal.history("t1") == [] and journal.live_segment("t1") is None
    finally:
        journal.close()


def test_settings_round_trip_through_their_dict() -> None:
    assert ModelSettings.from_dict(RUNS.to_dict()) == RUNS
    assert ModelSettings.from_dict({"temperature": 1.0, "later": 1}) == ModelSettings(1.0)
    assert ModelSettings().to_dict() == {}


def test_a_journal_made_before_run_settings_gets_the_column(journal_target: str) -> None:
    """Opening a file or database of the same layout without ``runs.settings`` adds it."""
    open_journal(journal_target).close()
    if journal_target.startswith("postgres"):
        import psycopg

        with psycopg.connect(journal_target, autocommit=True) as db:
            db.execute("ALTER TABLE runs DROP COLUMN settings")
        open_journal(journal_target).close()
        with psycopg.connect(journal_target) as db:
            rows = db.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'runs'"
            ).fetchall()
        columns = {name for (name,) in rows}
    else:
        db = sqlite3.connect(journal_target)
        db.execute("ALTER TABLE runs DROP COLUMN settings")
        db.commit()
        db.close()
        open_journal(journal_target).close()
        db = sqlite3.connect(journal_target)
        columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
        db.close()
    assert "settings" in columns
