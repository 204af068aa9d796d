"""The run journal on SQLite: one file, WAL, short transactions.

The standard library's ``sqlite3`` is used directly: the journal is a handful
of tables and statements, an ORM would hide the transaction boundaries that are
the point of it. Calls are synchronous; each is a short transaction on a local
file (well under a millisecond with WAL and ``synchronous=NORMAL``), which is
cheaper than hopping to a thread for every event.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import Any

from ..call import Decision, Interrupted, strip_meta
from ..messages import (
    AssistantMessage,
    Message,
    ToolResultMessage,
    message_from_dict,
    message_to_dict,
)
from .base import (
    Answer,
    EditValidator,
    PendingRecord,
    Rejected,
    Segment,
    Started,
    canonical_json,
    digest,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY, state TEXT, created_at REAL, updated_at REAL);
CREATE TABLE IF NOT EXISTS messages (
    thread_id TEXT, seq INTEGER, run_id TEXT, body TEXT, PRIMARY KEY (thread_id, seq));
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, thread_id TEXT, status TEXT, reason TEXT,
    created_at REAL, updated_at REAL);
CREATE INDEX IF NOT EXISTS runs_by_thread ON runs (thread_id, created_at);
CREATE TABLE IF NOT EXISTS segments (
    run_id TEXT, seq INTEGER, request_id TEXT, dedup_key TEXT UNIQUE, status TEXT,
    created_at REAL, PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS operations (
    run_id TEXT, seq INTEGER, segment INTEGER, name TEXT, call_id TEXT, input_hash TEXT,
    idempotency_key TEXT UNIQUE, status TEXT, output TEXT, started_at REAL,
    completed_at REAL, PRIMARY KEY (run_id, seq));
CREATE INDEX IF NOT EXISTS operations_by_call ON operations (run_id, call_id);
CREATE TABLE IF NOT EXISTS pending (
    thread_id TEXT, call_id TEXT, run_id TEXT, kind TEXT, approval_id TEXT UNIQUE,
    tool_name TEXT, arguments TEXT, reason_for_call TEXT, created_at REAL,
    resolved_at REAL, PRIMARY KEY (thread_id, call_id));
CREATE TABLE IF NOT EXISTS inbox (
    id INTEGER PRIMARY KEY, thread_id TEXT, run_id TEXT, call_id TEXT, kind TEXT,
    payload TEXT, dedup_key TEXT UNIQUE, created_at REAL);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT, "offset" INTEGER, type TEXT, frame BLOB, PRIMARY KEY (run_id, "offset"));
"""


class SQLiteJournal:
    """The default ``Journal``."""

    def __init__(self, path: str = "callwright.db") -> None:
        self.path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.RLock()
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # --- reading ----------------------------------------------------------------

    def history(self, thread_id: str) -> list[Message]:
        with self._lock:
            rows = self._db.execute(
                "SELECT body FROM messages WHERE thread_id = ? ORDER BY seq", (thread_id,)
            ).fetchall()
        return [message_from_dict(json.loads(body)) for (body,) in rows]

    def state(self, thread_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT state FROM threads WHERE id = ?", (thread_id,)
            ).fetchone()
        return json.loads(row[0]) if row and row[0] is not None else None

    def pending(self, thread_id: str) -> list[PendingRecord]:
        with self._lock:
            rows = self._db.execute(
                "SELECT thread_id, run_id, call_id, kind, tool_name, arguments, approval_id, "
                "reason_for_call, created_at FROM pending "
                "WHERE thread_id = ? AND resolved_at IS NULL ORDER BY created_at, call_id",
                (thread_id,),
            ).fetchall()
        return [_pending(row) for row in rows]

    def run_status(self, run_id: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        return row[0] if row else None

    def operations(self, run_id: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, segment, name, call_id, input_hash, idempotency_key, status, output "
                "FROM operations WHERE run_id = ? ORDER BY seq",
                (run_id,),
            ).fetchall()
        keys = ("seq", "segment", "name", "call_id", "input_hash", "idempotency_key", "status")
        return [
            {**dict(zip(keys, row[:7], strict=True)), "output": json.loads(row[7] or "null")}
            for row in rows
        ]

    def events_after(self, request_id: str, offset: int) -> list[tuple[int, bytes]]:
        """The event log of one segment (one request's stream), after ``offset``."""
        with self._lock:
            rows = self._db.execute(
                'SELECT "offset", frame FROM events WHERE run_id = ? AND "offset" > ? '
                'ORDER BY "offset"',
                (request_id, offset),
            ).fetchall()
        return [(o, bytes(f)) for o, f in rows]

    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every table: tests compare it before and after a refused request."""
        with self._lock:
            tables = [
                name
                for (name,) in self._db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                )
            ]
            return {
                t: self._db.execute(f'SELECT * FROM "{t}" ORDER BY 1, 2').fetchall() for t in tables
            }

    # --- starting a segment ----------------------------------------------------

    def begin(
        self,
        thread_id: str,
        request_id: str,
        new_messages: list[Message],
        answers: list[Answer],
        edits: dict[str, EditValidator | None],
        state: dict[str, Any] | None = None,
    ) -> Started:
        """Verify the answers against the pending calls and start a segment, atomically."""
        now = time.time()
        with self._tx() as db:
            history = self.history(thread_id)
            open_rows = {p.call_id: p for p in self.pending(thread_id)}
            decisions, results, call_ids = self._verify(
                db, thread_id, history, open_rows, answers, edits
            )
            resumed_run = next((p.run_id for p in open_rows.values()), None)
            if resumed_run is None:
                resumed_run = self._interrupted_run(db, thread_id)
            run_id = resumed_run or f"run_{digest([thread_id, request_id, now])[:24]}"
            seq = db.execute(
                "SELECT COALESCE(MAX(seq), -1) + 1 FROM segments WHERE run_id = ?", (run_id,)
            ).fetchone()[0]
            answered = sorted(canonical_json([a.kind, a.approval_id, a.call_id]) for a in answers)
            dedup = digest([run_id, answered] if answers else [thread_id, request_id])
            try:
                db.execute(
                    "INSERT INTO segments VALUES (?, ?, ?, ?, 'running', ?)",
                    (run_id, seq, request_id, dedup, now),
                )
            except sqlite3.IntegrityError:
                raise Rejected(
                    "this request was already processed (a replay)", "duplicate_request"
                ) from None
            for call_id in [*decisions, *results]:
                db.execute(
                    "UPDATE pending SET resolved_at = ? WHERE thread_id = ? AND call_id = ?",
                    (now, thread_id, call_id),
                )
            if new_messages and not answers:  # the user moved on: the loop skips those calls
                db.execute(
                    "UPDATE pending SET resolved_at = ? "
                    "WHERE thread_id = ? AND resolved_at IS NULL",
                    (now, thread_id),
                )
            for answer, call_id in zip(answers, call_ids, strict=True):
                db.execute(
                    "INSERT INTO inbox (thread_id, run_id, call_id, kind, payload, dedup_key, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        thread_id,
                        run_id,
                        call_id,
                        answer.kind,
                        canonical_json(_answer_payload(answer)),
                        digest([run_id, seq, answer.kind, call_id]),
                        now,
                    ),
                )
            saved_state = state if state is not None else self.state(thread_id)
            db.execute(
                "INSERT INTO threads VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                "state = excluded.state, updated_at = excluded.updated_at",
                (thread_id, _maybe_json(saved_state), now, now),
            )
            db.execute(
                "INSERT INTO runs VALUES (?, ?, 'running', NULL, ?, ?) ON CONFLICT(id) DO UPDATE "
                "SET status = 'running', updated_at = excluded.updated_at",
                (run_id, thread_id, now, now),
            )
            appended = [*results.values(), *new_messages]
            self._append(db, thread_id, run_id, len(history), appended)
            history += appended
        segment = Segment(thread_id, run_id, seq, request_id)
        return Started(
            segment,
            history,
            decisions,
            saved_state,
            committed=list(history),
        )

    def _interrupted_run(self, db: sqlite3.Connection, thread_id: str) -> str | None:
        row = db.execute(
            "SELECT id FROM runs WHERE thread_id = ? AND status = 'interrupted' "
            "ORDER BY created_at DESC LIMIT 1",
            (thread_id,),
        ).fetchone()
        return row[0] if row else None

    def _verify(
        self,
        db: sqlite3.Connection,
        thread_id: str,
        history: list[Message],
        open_rows: dict[str, PendingRecord],
        answers: list[Answer],
        edits: dict[str, EditValidator | None],
    ) -> tuple[dict[str, Decision], dict[str, ToolResultMessage], list[str]]:
        """The answers as decisions and results, and the call each answer is for (an
        AG-UI ``resume`` names only the approval, not the call)."""
        decisions: dict[str, Decision] = {}
        results: dict[str, ToolResultMessage] = {}
        call_ids: list[str] = []
        issued_calls = {
            part.id for m in history if isinstance(m, AssistantMessage) for part in m.tool_calls
        }
        for answer in answers:
            row = self._find(db, thread_id, answer, issued_calls)
            if answer.call_id is not None and answer.call_id != row.call_id:
                raise Rejected(
                    f"approval {answer.approval_id!r} was issued for call {row.call_id!r}, "
                    f"not {answer.call_id!r}",
                    "approval_mismatch",
                )
            if answer.tool_name is not None and answer.tool_name != row.tool_name:
                raise Rejected(
                    f"call {row.call_id!r} is a call of {row.tool_name!r}, "
                    f"not {answer.tool_name!r}",
                    "tool_mismatch",
                )
            if row.call_id in decisions or row.call_id in results:
                raise Rejected(f"call {row.call_id!r} is answered twice", "duplicate_answer", 400)
            call_ids.append(row.call_id)
            if answer.kind == "client":
                results[row.call_id] = ToolResultMessage(
                    row.call_id, row.tool_name, answer.result or "", answer.is_error
                )
                continue
            arguments = None
            if answer.arguments is not None and _params(answer.arguments) != _params(row.arguments):
                validate = edits.get(row.tool_name)
                if validate is None:
                    raise Rejected(
                        f"the arguments of call {row.call_id!r} were changed; "
                        f"{row.tool_name} does not allow edits",
                        "arguments_changed",
                    )
                params = strip_meta(answer.arguments)
                try:
                    validate(params)
                except Exception as exc:
                    raise Rejected(
                        f"edited arguments for {row.tool_name} are invalid: {exc}",
                        "invalid_edit",
                        422,
                    ) from None
                arguments = params
            decisions[row.call_id] = Decision(bool(answer.approved), answer.reason, arguments)
        return decisions, results, call_ids

    def _find(
        self, db: sqlite3.Connection, thread_id: str, answer: Answer, issued: set[str]
    ) -> PendingRecord:
        if answer.kind == "approval":
            row = db.execute(
                "SELECT thread_id, run_id, call_id, kind, tool_name, arguments, approval_id, "
                "reason_for_call, created_at, resolved_at FROM pending WHERE approval_id = ?",
                (answer.approval_id,),
            ).fetchone()
            if row is None:
                asked = db.execute(
                    "SELECT 1 FROM pending "
                    "WHERE thread_id = ? AND call_id = ? AND kind = 'approval'",
                    (thread_id, answer.call_id),
                ).fetchone()
                if answer.call_id in issued and asked is None:
                    raise Rejected(
                        f"no approval was requested for call {answer.call_id!r}",
                        "approval_not_requested",
                    )
                raise Rejected(
                    f"approval {answer.approval_id!r} was not issued by this server",
                    "unknown_approval",
                    404,
                )
        else:
            row = db.execute(
                "SELECT thread_id, run_id, call_id, kind, tool_name, arguments, approval_id, "
                "reason_for_call, created_at, resolved_at FROM pending "
                "WHERE thread_id = ? AND call_id = ? AND kind = 'client'",
                (thread_id, answer.call_id),
            ).fetchone()
            if row is None:
                raise Rejected(
                    f"no client tool call {answer.call_id!r} was issued in this thread",
                    "unknown_call",
                    404,
                )
        record = _pending(row[:9])
        if record.thread_id != thread_id:
            raise Rejected(
                f"approval {answer.approval_id!r} belongs to another thread", "wrong_thread", 403
            )
        if row[9] is not None:
            raise Rejected(f"call {record.call_id!r} was already answered", "already_answered")
        return record

    # --- recording a segment ---------------------------------------------------

    def has_events(self, request_id: str) -> bool:
        with self._lock:
            row = self._db.execute(
                "SELECT 1 FROM segments WHERE request_id = ?", (request_id,)
            ).fetchone()
        return row is not None

    def segment_done(self, request_id: str) -> bool:
        with self._lock:
            row = self._db.execute(
                "SELECT status FROM segments WHERE request_id = ?", (request_id,)
            ).fetchone()
        return row is None or row[0] != "running"

    def next_operation(self, run_id: str) -> int:
        with self._lock:
            return int(
                self._db.execute(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM operations WHERE run_id = ?", (run_id,)
                ).fetchone()[0]
            )

    def plan_operations(self, segment: Segment, rows: list[dict[str, Any]]) -> None:
        """Write operations in the model's order before any of them starts."""
        now = time.time()
        with self._tx() as db:
            for row in rows:
                db.execute(
                    "INSERT INTO operations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        segment.run_id,
                        row["seq"],
                        segment.seq,
                        row["name"],
                        row["call_id"],
                        row["input_hash"],
                        f"{segment.run_id}:{row['seq']}:{row['name']}:{row['call_id']}",
                        row["status"],
                        canonical_json(row.get("output")),
                        now,
                        now if row["status"] == "completed" else None,
                    ),
                )

    def mark_operation(
        self,
        segment: Segment,
        call_id: str,
        status: str,
        output: Any = None,
        events: Any = (),
    ) -> None:
        now = time.time()
        run_id = segment.run_id
        with self._tx() as db:
            if status == "started":
                db.execute(
                    "UPDATE operations SET status = 'started', started_at = ? "
                    "WHERE run_id = ? AND call_id = ? AND name != 'model'",
                    (now, run_id, call_id),
                )
            else:
                db.execute(
                    "UPDATE operations SET status = ?, output = ?, completed_at = ? "
                    "WHERE run_id = ? AND call_id = ? AND name != 'model'",
                    (status, canonical_json(output), now, run_id, call_id),
                )
            db.executemany(
                "INSERT INTO events VALUES (?, ?, ?, ?)",
                [(segment.request_id, *e) for e in events],
            )

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
        """One step's writes in one transaction: messages, state, pending calls, events, status."""
        now = time.time()
        first = 0
        while (
            first < len(committed) and first < len(messages) and committed[first] is messages[first]
        ):
            first += 1
        with self._tx() as db:
            db.execute(
                "DELETE FROM messages WHERE thread_id = ? AND seq >= ?", (segment.thread_id, first)
            )
            self._append(db, segment.thread_id, segment.run_id, first, messages[first:])
            if state is not None:
                db.execute(
                    "UPDATE threads SET state = ?, updated_at = ? WHERE id = ?",
                    (canonical_json(state), now, segment.thread_id),
                )
            for p in pending:
                db.execute(
                    "INSERT OR REPLACE INTO pending VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                    (
                        p.thread_id,
                        p.call_id,
                        p.run_id,
                        p.kind,
                        p.approval_id,
                        p.tool_name,
                        canonical_json(p.arguments),
                        p.reason_for_call,
                        now,
                    ),
                )
            db.executemany(
                "INSERT INTO events VALUES (?, ?, ?, ?)",
                [(segment.request_id, *e) for e in events],
            )
            if status is not None:
                db.execute(
                    "UPDATE runs SET status = ?, reason = ?, updated_at = ? WHERE id = ?",
                    (status, reason, now, segment.run_id),
                )
                db.execute(
                    "UPDATE segments SET status = ? WHERE run_id = ? AND seq = ?",
                    (status, segment.run_id, segment.seq),
                )
        committed[:] = messages

    def _append(
        self,
        db: sqlite3.Connection,
        thread_id: str,
        run_id: str,
        start: int,
        messages: list[Message],
    ) -> None:
        db.executemany(
            "INSERT INTO messages VALUES (?, ?, ?, ?)",
            [
                (thread_id, start + i, run_id, canonical_json(message_to_dict(m)))
                for i, m in enumerate(messages)
            ],
        )

    # --- after a crash -----------------------------------------------------------

    def recover(self, idempotent: set[str]) -> list[str]:
        """Settle runs that were running when the process died.

        The step the model had answered is rebuilt from the operations: completed
        tool calls are replayed from their journaled output, a call that had
        started gets an "interrupted" error unless its tool is idempotent (then it
        runs again on resume), and calls that never started run on resume.
        """
        with self._lock:
            runs = self._db.execute(
                "SELECT id, thread_id FROM runs WHERE status = 'running'"
            ).fetchall()
        recovered = []
        for run_id, thread_id in runs:
            history = self.history(thread_id)
            known = {m.id for m in history if isinstance(m, AssistantMessage) and m.id}
            answered = {m.call_id for m in history if isinstance(m, ToolResultMessage)}
            ops = self.operations(run_id)
            additions: list[Message] = []
            for op in ops:
                if op["name"] != "model" or op["output"] is None:
                    continue
                reply = message_from_dict(op["output"])
                if isinstance(reply, AssistantMessage) and reply.id not in known:
                    additions.append(reply)
            names = {
                p.id: p.name
                for m in additions
                if isinstance(m, AssistantMessage)
                for p in m.tool_calls
            }
            for op in ops:
                call_id = op["call_id"]
                if op["name"] == "model" or call_id in answered or call_id not in names:
                    continue
                if op["status"] == "completed" and op["output"] is not None:
                    out = op["output"]
                    additions.append(
                        ToolResultMessage(call_id, names[call_id], out["content"], out["is_error"])
                    )
                elif op["status"] == "started" and names[call_id] not in idempotent:
                    additions.append(
                        ToolResultMessage(call_id, names[call_id], Interrupted().model_text(), True)
                    )
            with self._tx() as db:
                self._append(db, thread_id, run_id, len(history), additions)
                db.execute(
                    "UPDATE runs SET status = 'interrupted', reason = ? WHERE id = ?",
                    ("the server stopped during the run", run_id),
                )
            recovered.append(run_id)
        return recovered


def _pending(row: tuple[Any, ...]) -> PendingRecord:
    return PendingRecord(
        thread_id=row[0],
        run_id=row[1],
        call_id=row[2],
        kind=row[3],
        tool_name=row[4],
        arguments=json.loads(row[5]),
        approval_id=row[6],
        reason_for_call=row[7],
        created_at=row[8] or 0.0,
    )


def _params(arguments: dict[str, Any]) -> str:
    """Arguments without runtime meta (clients need not echo ``_outputPath``...), canonical."""
    return canonical_json(strip_meta(arguments))


def _maybe_json(value: Any) -> str | None:
    return None if value is None else canonical_json(value)


def _answer_payload(answer: Answer) -> dict[str, Any]:
    return {
        "approval_id": answer.approval_id,
        "approved": answer.approved,
        "reason": answer.reason,
        "arguments": answer.arguments,
        "result": answer.result,
        "is_error": answer.is_error,
    }
