"""The run journal's interface and records.

It is shaped as an operations journal (the tables a durable-execution engine
such as DBOS keeps): a run is a sequence of *segments*, each ending where the
run waits for a human or a client; every model call and tool call in a segment
is an *operation* with a deterministic sequence number, a stable name, its call
id, an input hash and an idempotency key, written ``started`` before a tool runs
and ``completed`` with its output after. Answers to pending calls are *inbox*
rows, and the next segment is enqueued with a deduplication key in the same
transaction. Swapping SQLite for such an engine is a new implementation of this
protocol, not a rewrite of the server.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..call import Decision
from ..messages import Message

PendingKind = Literal["approval", "client"]


def canonical_json(value: Any) -> str:
    """One spelling per value: sorted keys, no spaces (what hashes and comparisons use)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


class Rejected(Exception):
    """A request the journal refuses; nothing was written. Carries an HTTP status and a code."""

    def __init__(self, message: str, code: str, status: int = 409) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


@dataclass(slots=True)
class PendingRecord:
    """A call the run waits on, with exactly what was asked and who may answer (the thread)."""

    thread_id: str
    run_id: str
    call_id: str
    kind: PendingKind
    tool_name: str
    arguments: dict[str, Any]
    approval_id: str | None = None
    reason_for_call: str | None = None
    created_at: float = 0.0


@dataclass(slots=True)
class Answer:
    """What a client sent back for a pending call: a decision, or a client tool's result."""

    kind: PendingKind
    call_id: str | None = None
    approval_id: str | None = None
    approved: bool | None = None
    reason: str | None = None
    tool_name: str | None = None
    arguments: dict[str, Any] | None = None  # an approval's (possibly edited) arguments
    result: str | None = None  # a client tool's output, as the model will see it
    is_error: bool = False


@dataclass(slots=True)
class Segment:
    """One stretch of a run, from a request to the run finishing or waiting again."""

    thread_id: str
    run_id: str
    seq: int
    request_id: str


@dataclass(slots=True)
class Started:
    """What ``Journal.begin`` hands the server: the segment, trusted history, decisions, state."""

    segment: Segment
    history: list[Message]
    decisions: dict[str, Decision]
    state: dict[str, Any] | None
    committed: list[Message] = field(default_factory=list)


EditValidator = Callable[[dict[str, Any]], Any]


class Journal(Protocol):
    """What the server and the ``Recorder`` need from durable storage.

    ``SQLiteJournal`` implements it; a durable-execution backend would too.
    """

    def history(self, thread_id: str) -> list[Message]:
        """The conversation as the server produced it (trusted over the client's copy)."""
        ...

    def state(self, thread_id: str) -> dict[str, Any] | None: ...

    def pending(self, thread_id: str) -> list[PendingRecord]: ...

    def begin(
        self,
        thread_id: str,
        request_id: str,
        new_messages: list[Message],
        answers: list[Answer],
        edits: dict[str, EditValidator | None],
        state: dict[str, Any] | None = None,
    ) -> Started:
        """Check the answers against the pending calls and start a segment, atomically.

        Raises ``Rejected`` (and writes nothing) for a forged, replayed,
        cross-thread or edited approval, or a result for a call never issued.
        """
        ...

    def next_operation(self, run_id: str) -> int: ...

    def plan_operations(self, segment: Segment, rows: list[dict[str, Any]]) -> None:
        """Write a step's operations in the model's order before any of them starts."""
        ...

    def mark_operation(
        self,
        segment: Segment,
        call_id: str,
        status: str,
        output: Any = None,
        events: Any = (),
    ) -> None:
        """A tool's ``started`` / ``completed`` row, committed at once (with pending events)."""
        ...

    def commit(
        self,
        segment: Segment,
        committed: list[Message],
        messages: list[Message],
        state: dict[str, Any] | None,
        pending: list[PendingRecord],
        events: list[tuple[int, str, bytes]],
        status: str | None = None,
        reason: str | None = None,
    ) -> None:
        """One step's writes in one transaction."""
        ...

    def events_after(self, request_id: str, offset: int) -> list[tuple[int, bytes]]: ...

    def has_events(self, request_id: str) -> bool: ...

    def segment_done(self, request_id: str) -> bool: ...

    def recover(self, idempotent: set[str]) -> list[str]:
        """After a crash: settle the runs that were running. Returns their ids."""
        ...

    def close(self) -> None: ...
