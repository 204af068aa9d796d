"""Journals one segment of a run from its canonical events.

Commit points are where a step is whole: ``StepFinished`` and the run's last
event (and ``StepStarted`` when results of resumed calls are not committed yet).
Operation rows are written as they happen (a tool's ``started`` row before it
runs, ``completed`` with its output after), because they are what a restarted
server reads to tell a finished tool from an interrupted one. Frames for replay
are buffered and go with those writes (and on their own past a size).

Two modes. Synchronous (``Recorder(journal, started, run)``): every write is a
call on the journal, as the library API and tests use it. Asynchronous
(``asynchronous=True``, what the server uses): writes are submitted to the
journal's writer thread; ``record`` returns an awaitable exactly where the run
must not go on before the write is durable (a tool's ``started`` row, its
outcome, a commit), and ``None`` otherwise. A failed write makes that awaitable
raise ``JournalUnavailable``: the run stops rather than go on unrecorded, and
``finish`` hands the segment back to the journal to settle.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from ..events import (
    ApprovalRequested,
    Event,
    ModelResponse,
    RunError,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    ToolCallResult,
    ToolExecutionStart,
)
from ..messages import message_to_dict
from .base import Journal, JournalUnavailable, PendingRecord, Started, digest

FLUSH_BYTES = 64 * 1024
"""Buffered frames past this size are written without waiting for a commit point."""

_Write = concurrent.futures.Future[Any]


class Recorder:
    def __init__(
        self, journal: Journal, started: Started, run: Any, *, asynchronous: bool = False
    ) -> None:
        self.journal = journal
        self.started = started
        self.segment = started.segment
        self.run = run
        self.offset = 0
        """Offsets count this segment's events (one request's stream)."""
        self.op_seq = started.next_operation
        self.status: str | None = None
        self.closing = b""
        """The frame that ends a replay of this segment if the run never finishes
        (set by the server, which knows the wire protocol)."""
        self.cut_frame: Callable[[int], bytes] | None = None
        """Makes the frame that ends the kept event log when it reaches its cap."""
        self.failure: JournalUnavailable | None = None
        self._async = asynchronous
        self._events: list[tuple[int, str, bytes]] = []
        self._buffered = 0
        self._log_bytes = 0
        self._log_cut = False
        self._pending: list[PendingRecord] = []
        self._dirty = False
        self._writes: list[tuple[_Write, tuple[str, Any] | None]] = []
        self._unwritten: list[tuple[str, Any]] = []
        self._idempotent = {t.name for t in getattr(run, "toolbox", ()) if t.idempotent}

    def record(self, event: Event, frame: bytes = b"") -> Awaitable[None] | None:
        """Journal one event (and the wire frame sent for it).

        Asynchronous mode: returns what to await before the run may go on, or None.
        """
        self.offset += 1
        self._keep(event, frame)
        if isinstance(event, ModelResponse):
            self._plan(event)
        elif isinstance(event, ToolExecutionStart):
            return self._write(self.journal.mark_operation, event.call_id, "started")
        elif isinstance(event, ToolCallResult):
            output = {
                "state": event.state,
                "content": event.content,
                "is_error": event.state != "output-available",
            }
            self._dirty = True
            return self._write(self.journal.mark_operation, event.call_id, "completed", output)
        elif isinstance(event, ApprovalRequested):
            self._pending.append(
                PendingRecord(
                    self.segment.thread_id,
                    self.segment.run_id,
                    event.call_id,
                    "approval",
                    event.tool_name,
                    event.arguments,
                    event.approval_id,
                    event.reason_for_call,
                )
            )
        elif isinstance(event, StepFinished) or (isinstance(event, StepStarted) and self._dirty):
            return self._commit()
        elif isinstance(event, RunFinished):
            self._pending.extend(
                PendingRecord(
                    self.segment.thread_id,
                    self.segment.run_id,
                    p.call_id,
                    "client",
                    p.tool_name,
                    p.arguments,
                )
                for p in event.pending
                if p.kind == "client"
            )
            return self._commit(event.status, event.reason)
        elif isinstance(event, RunError):
            return self._commit("error", event.message)
        elif isinstance(event, RunStarted) and self._async and self.closing:
            self._submit(self.journal.open_segment, (self.segment, self.closing), None)
        elif self._buffered > FLUSH_BYTES and self._async:
            self._submit(self.journal.append_events, (self.segment, self._take()), None)
        return None

    def finish_unrecorded(self, status: str, reason: str) -> None:
        """The stream ended without a last event (the client went away mid-run)."""
        if self.status is None:
            self._commit(status, reason)

    async def finish(
        self, status: str = "cancelled", reason: str = "the stream ended early"
    ) -> None:
        """Asynchronous mode, when the stream is over: close the segment if no last event
        did, wait for the writes in flight, and hand the segment back to the journal
        (which settles it if it is still running because a write failed)."""
        if self.status is None and self.failure is None:
            pending = self._commit(status, reason)
            if pending is not None:
                with contextlib.suppress(JournalUnavailable):
                    await pending
        if self._writes:
            with contextlib.suppress(JournalUnavailable):
                await self._settle_writes()
        self.journal.release(self.segment, self._unwritten if self.failure else None)

    # --- writing ----------------------------------------------------------------------

    def _keep(self, event: Event, frame: bytes) -> None:
        """Buffer the frame for the event log, up to the journal's cap per segment."""
        if not frame or self._log_cut:
            return
        size = len(frame)
        cap = self.journal.limits.max_event_log_bytes
        if self._log_bytes + size > cap:
            self._log_cut = True
            marker = self.cut_frame(cap) if self.cut_frame is not None else b""
            if marker:
                self._events.append((self.offset, "LOG_CUT", marker))
            return
        self._log_bytes += size
        self._buffered += size
        self._events.append((self.offset, event.type, frame))

    def _take(self) -> list[tuple[int, str, bytes]]:
        events, self._events = self._events, []
        self._buffered = 0
        return events

    def _write(
        self, method: Callable[..., None], call_id: str, status: str, output: Any = None
    ) -> Awaitable[None] | None:
        """A tool operation's row (with the buffered frames); durable before the run goes on."""
        args = (self.segment, call_id, status, output, self._take())
        if not self._async:
            method(*args)
            return None
        self._submit(method, args, (call_id, output) if status == "completed" else None)
        return self._settle_writes()

    def _submit(
        self, method: Callable[..., None], args: tuple[Any, ...], outcome: tuple[str, Any] | None
    ) -> None:
        if self.failure is not None:
            raise self.failure
        self._writes.append((self.journal.submit(method, *args), outcome))

    async def _settle_writes(self) -> None:
        """Wait for the writes in flight (in order: the last done means all are); raise
        ``JournalUnavailable`` if any failed."""
        writes, self._writes = self._writes, []
        if self.failure is not None:
            raise self.failure
        with contextlib.suppress(Exception):  # looked at below, with the others
            await asyncio.wrap_future(writes[-1][0])
        error: BaseException | None = None
        for future, outcome in writes:
            exc = future.exception()
            if exc is not None:
                error = error or exc
                if outcome is not None:
                    self._unwritten.append(outcome)
        if error is not None:
            self.failure = JournalUnavailable(error)
            raise self.failure from error

    def _plan(self, event: ModelResponse) -> None:
        message = event.message
        rows: list[dict[str, Any]] = [
            {
                "seq": self.op_seq,
                "name": "model",
                "call_id": message.id,
                "input_hash": digest([self.segment.run_id, event.step]),
                "status": "completed",
                "output": message_to_dict(message),
            }
        ]
        for i, call in enumerate(message.tool_calls, start=1):
            rows.append(
                {
                    "seq": self.op_seq + i,
                    "name": f"tool:{call.name}",
                    "call_id": call.id,
                    "input_hash": digest(call.arguments),
                    "status": "planned",
                    "idempotent": call.name in self._idempotent,
                }
            )
        self.op_seq += len(rows)
        if self._async:
            self._submit(self.journal.plan_operations, (self.segment, rows, self._take()), None)
        else:
            self.journal.plan_operations(self.segment, rows, self._take())

    def _commit(
        self, status: str | None = None, reason: str | None = None
    ) -> Awaitable[None] | None:
        args = (
            self.segment,
            self.started.committed,
            list(self.run.messages) if self._async else self.run.messages,
            self.run.state.data,
            self._pending,
            self._take(),
            status,
            reason,
        )
        self._pending = []
        self._dirty = False
        if status is not None:
            self.status = status
        if not self._async:
            self.journal.commit(*args)
            return None
        self._submit(self.journal.commit, args, None)
        return self._settle_writes()
