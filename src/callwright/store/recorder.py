"""Journals one segment of a run from its canonical events.

Commit points are where a step is whole: ``StepFinished`` and the run's last
event (and ``StepStarted`` when results of resumed calls are not committed yet).
Operation rows are written as they happen (a tool's ``started`` row before it
runs, ``completed`` with its output after), because they are what a restarted
server reads to tell a finished tool from an interrupted one. Frames for replay
go with those writes, as one chunk each.

The recorder never reads the live run: the history comes from ``HistoryChanged`` events
(what each step added), the state document is read only when its ``version`` moved, and
whether a tool may run again from ``idempotent``. A step's journal work is therefore
proportional to what the step added, however long the thread.

Two modes. Synchronous (``Recorder(journal, started, ...)``): every write is a
call on the journal, as the library API and tests use it. Asynchronous
(``asynchronous=True``, what the server uses): writes are held until the next
*durable point* and then submitted together, as one ``group``, to the journal's
writer thread. The durable points are a tool's ``started`` row (before the tool
runs), its outcome (before the run goes on) and the run's end (before the client
sees it); there ``record`` returns an awaitable, elsewhere ``None``. Held frames
go as one chunk with a tool's ``started`` row, its outcome and the run's end (a
frame a client could have seen is kept before the run acts on what follows it), and after
``FLUSH_SECONDS`` or ``FLUSH_BYTES`` so that a replay follows a long reply. A
failed write makes the awaitable raise ``JournalUnavailable``: the run stops
rather than go on unrecorded, and ``finish`` hands the segment back to the
journal to settle, with the outcomes and the frames it could not write (every frame
the client was sent: the replay of the settled run holds them all).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from .._tool_files import file_to_dict
from ..call import InDoubt
from ..events import (
    ApprovalRequested,
    Event,
    HistoryChanged,
    InputRequested,
    ModelResponse,
    RunError,
    RunFinished,
    StepFinished,
    StepStarted,
    ToolCallResult,
    ToolExecutionStart,
    ToolHandleSaved,
)
from ..messages import Message
from ..state import RunState
from .base import Journal, JournalUnavailable, PendingRecord, Started, canonical_json

FLUSH_BYTES = 64 * 1024
"""Held frames past this size are written without waiting for a durable point."""
FLUSH_SECONDS = 0.5
"""Held frames older than this are written with the next event."""

_Write = tuple[Callable[..., Any], tuple[Any, ...]]
_Outcome = tuple[str, Any]
_Frame = tuple[int, str, bytes]


def apply_writes(journal: Journal, writes: list[_Write]) -> None:
    """Run on the writer thread: a segment's held writes, all or nothing."""
    with journal.group():
        for method, args in writes:
            method(*args)


def _never(name: str) -> bool:
    return False


class Recorder:
    def __init__(
        self,
        journal: Journal,
        started: Started,
        *,
        state: RunState | None = None,
        idempotent: Callable[[str], bool] = _never,
        asynchronous: bool = False,
    ) -> None:
        """``state``: the run's state document (stored when a write changed it);
        ``idempotent``: whether the tool of that name may run again after a crash (asked
        per call: an MCP server's tools are listed after the run starts)."""
        self.journal = journal
        self.started = started
        self.segment = started.segment
        self._state = state
        self._state_version = state.version if state is not None else 0
        self._idempotent = idempotent
        self._history_from: int | None = None
        """Where the history not yet committed begins (None: nothing new)."""
        self._history: list[Message] = []
        """The history from ``_history_from`` on, as the last ``HistoryChanged`` said."""
        self.offset = started.event_offset
        """Offsets count this segment's events (one request's stream; a continued
        segment's go on from the last one journaled)."""
        self.op_seq = started.next_operation
        self.status: str | None = None
        self.cut_frame: Callable[[int], bytes] | None = None
        """Makes the frame that ends the kept event log when it reaches its cap."""
        self.failure: JournalUnavailable | None = None
        self._async = asynchronous
        self._events: list[_Frame] = []
        self._buffered = 0
        self._since = time.monotonic()
        self._log_bytes = 0
        self._log_cut = False
        self._pending: list[PendingRecord] = []
        self._dirty = False
        self._held: list[_Write] = []
        self._held_outcomes: list[_Outcome] = []
        self._unplanned: dict[str, Any] | None = None
        self._writes: list[tuple[asyncio.Future[Any], list[_Outcome], list[_Frame]]] = []
        self._unwritten: list[_Outcome] = []
        self._lost: list[_Frame] = []
        """Frames of writes that failed or were never submitted after a failure: the
        journal keeps them when it settles the segment."""
        self._unsent: set[int] = set()
        """Offsets of events whose durable point failed: their frames never left."""

    def record(self, event: Event, frame: bytes = b"") -> Awaitable[None] | None:
        """Journal one event (and the wire frame sent for it).

        Asynchronous mode: returns what to await before the run may go on, or None.
        """
        self.offset += 1
        if frame:
            self._keep(event.type, frame)
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            return handler(self, event)
        if self._async and self._events and self._frames_due():
            self._flush(frames=True)
        return None

    def record_frame(self, frame: bytes) -> None:
        """Journal a frame that belongs to no event of this run (what a continued segment
        sends to close what the stream before it left open)."""
        self.offset += 1
        self._keep("FRAME", frame)

    def finish_unrecorded(self, status: str, reason: str) -> None:
        """The stream ended without a last event (the client went away mid-run)."""
        if self.status is None:
            self._commit(status, reason)

    async def finish(
        self, status: str = "cancelled", reason: str = "the stream ended early"
    ) -> None:
        """When the stream is over: close the segment if no last event did, wait for the
        writes in flight, and hand the segment back to the journal (which settles it if
        it is still running because a write failed)."""
        if self.status is None and self.failure is None:
            with contextlib.suppress(JournalUnavailable):
                self._commit(status, reason)
        if self._async and self.failure is None:
            self._flush(frames=True)
        if self._writes:
            with contextlib.suppress(JournalUnavailable):
                await self._settle()
        if self.failure is None:
            self.journal.release(self.segment)
            return
        self._lost.extend(self._take())
        seen = [f for f in sorted(self._lost, key=_offset) if f[0] not in self._unsent]
        self.journal.release(self.segment, self._unwritten, frames=seen)

    # --- what each event writes ---------------------------------------------------------

    def _on_model_response(self, event: Event) -> None:
        assert isinstance(event, ModelResponse)
        message = event.message
        rows: list[dict[str, Any]] = [
            {
                "seq": self.op_seq,
                "name": "model",
                "call_id": message.id,
                "step": event.step,
                "status": "completed",
                "message": message,
            }
        ]
        for i, call in enumerate(message.tool_calls, start=1):
            rows.append(
                {
                    "seq": self.op_seq + i,
                    "name": f"tool:{call.name}",
                    "call_id": call.id,
                    "arguments": call.arguments,
                    "status": "planned",
                    "idempotent": self._idempotent(call.name),
                }
            )
        self.op_seq += len(rows)
        self._unplanned = rows[0]
        self._do(self.journal.plan_operations, self.segment, rows, self._frames())

    def _on_history(self, event: Event) -> None:
        """Keep what the history gained for the next commit (a later change from an earlier
        index replaces what it covers)."""
        assert isinstance(event, HistoryChanged)
        start = self._history_from
        if start is None or event.start < start:
            self._history_from, self._history = event.start, list(event.messages)
        else:
            self._history[event.start - start :] = event.messages

    def _on_tool_started(self, event: Event) -> Awaitable[None] | None:
        assert isinstance(event, ToolExecutionStart)
        edited = None if event.edited is None else {"edited": event.edited}
        args = (self.segment, event.call_id, "started", edited, self._frames())
        self._do(self.journal.mark_operation, *args)
        return self._durable(frames=True)  # a tool may take long: the stream so far goes too

    def _on_tool_handle(self, event: Event) -> Awaitable[None] | None:
        assert isinstance(event, ToolHandleSaved)
        self._do(self.journal.mark_operation, self.segment, event.call_id, "handle", event.handle)
        return self._durable()  # kept before the run goes on: a restart may come at any time

    def _on_tool_result(self, event: Event) -> Awaitable[None] | None:
        assert isinstance(event, ToolCallResult)
        output: dict[str, Any] = {
            "state": event.state,
            "content": event.content,
            "is_error": event.state != "output-available",
        }
        if event.files:
            output["files"] = [file_to_dict(f) for f in event.files]
        self._dirty = True
        status = "in_doubt" if event.error_kind == InDoubt.kind else "completed"
        self._do(
            self.journal.mark_operation, self.segment, event.call_id, status, output,
            self._frames(),
        )  # fmt: skip
        self._held_outcomes.append((event.call_id, output))
        # the result's frame goes with it: a process that continues the run after this
        # one dies reads the result back and never sends it again
        return self._durable(frames=True)

    def _on_approval(self, event: Event) -> None:
        assert isinstance(event, ApprovalRequested)
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

    def _on_input(self, event: Event) -> None:
        """A running call asked a human (MCP elicitation): pending until answered, the
        question (its state too) kept with it."""
        assert isinstance(event, InputRequested)
        self._pending.append(
            PendingRecord(
                self.segment.thread_id,
                self.segment.run_id,
                event.call_id,
                "input",
                event.tool_name,
                event.arguments,
                approval_id=event.request.id,
                request=event.request,
            )
        )

    def _on_step_started(self, event: Event) -> Awaitable[None] | None:
        return self._commit() if self._dirty or self._history_from is not None else None

    def _on_step_finished(self, event: Event) -> Awaitable[None] | None:
        return self._commit()

    def _on_run_finished(self, event: Event) -> Awaitable[None] | None:
        assert isinstance(event, RunFinished)
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

    def _on_run_error(self, event: Event) -> Awaitable[None] | None:
        assert isinstance(event, RunError)
        return self._commit("error", event.message)

    def _commit(
        self, status: str | None = None, reason: str | None = None
    ) -> Awaitable[None] | None:
        """The step's messages, state and pending calls (and the run's end, with a status).

        A step's commit is not a durable point: its outcomes are already operation
        rows. The run's last commit is, so that a client that sees the end of the
        stream finds the thread free and its pending calls recorded.
        """
        state = None
        if self._state is not None and self._state.version != self._state_version:
            self._state_version = self._state.version
            state = json.loads(canonical_json(self._state.data))  # a snapshot: writes go on
        start, messages = self._history_from, self._history
        self._history_from, self._history = None, []
        if self._unplanned is not None and self._async:
            self._unplanned["message"] = None  # its plan is still held: the commit keeps it
        self._unplanned = None
        pending, self._pending = self._pending, []
        self._dirty = False
        if status is not None:
            self.status = status
        self._do(
            self.journal.commit, self.segment, start, messages, state, pending, self._frames(),
            status, reason,
        )  # fmt: skip
        return self._durable(frames=True) if status is not None else None

    # --- writing ----------------------------------------------------------------------

    def _keep(self, kind: str, frame: bytes) -> None:
        """Hold the frame for the event log, up to the journal's cap per segment."""
        if self._log_cut:
            return
        size = len(frame)
        cap = self.journal.limits.max_event_log_bytes
        if self._log_bytes + size > cap:
            self._log_cut = True
            marker = self.cut_frame(cap) if self.cut_frame is not None else b""
            if marker:
                self._events.append((self.offset, "LOG_CUT", marker))
            return
        if not self._events:
            self._since = time.monotonic()
        self._log_bytes += size
        self._buffered += size
        self._events.append((self.offset, kind, frame))

    def _take(self) -> list[_Frame]:
        events, self._events = self._events, []
        self._buffered = 0
        return events

    def _frames(self) -> list[_Frame]:
        """The frames to write with a write now: all held ones (synchronous mode), or none
        (asynchronous: they go as one chunk with the submission)."""
        return [] if self._async else self._take()

    def _do(self, method: Callable[..., Any], *args: Any) -> None:
        """Write now (synchronous mode) or hold the write for the next submission."""
        if not self._async:
            method(*args)
            return
        if self.failure is not None:
            raise self.failure
        self._held.append((method, args))

    def _frames_due(self) -> bool:
        return self._buffered > FLUSH_BYTES or time.monotonic() - self._since > FLUSH_SECONDS

    def _flush(self, *, frames: bool = False) -> None:
        """Submit the held writes as one group (not waited for here), with the held frames
        as one chunk when ``frames`` (or when they are due anyway).

        A model operation whose plan is submitted keeps its reply until the step's
        commit (recovery needs it if the process dies in between)."""
        self._unplanned = None
        chunk: list[_Frame] = []
        if self._events and (frames or self._frames_due()):
            chunk = self._take()
            self._held.append((self.journal.append_events, (self.segment, chunk)))
        if not self._held:
            return
        writes, self._held = self._held, []
        outcomes, self._held_outcomes = self._held_outcomes, []
        if self._a_write_failed():
            self._unwritten.extend(outcomes)
            self._lost.extend(chunk)
            return
        future = self.journal.submit(apply_writes, self.journal, writes)
        if future is not None:
            self._writes.append((future, outcomes, chunk))

    def _a_write_failed(self) -> bool:
        """Whether a write submitted earlier failed (raised at the next durable point).
        Nothing is submitted after it: a later chunk kept after a lost one was a replay
        with a hole (a text delta whose start was lost; a run completed without the
        frames the client saw first)."""
        if self.failure is not None:
            return True
        return any(
            future.done() and not future.cancelled() and future.exception() is not None
            for future, _, _ in self._writes
        )

    def _durable(self, *, frames: bool = False) -> Awaitable[None] | None:
        if not self._async:
            return None
        self._flush(frames=frames)
        return self._settle(self.offset)

    async def _settle(self, durable: int | None = None) -> None:
        """Wait for the writes in flight (in order: the last done means all are); raise
        ``JournalUnavailable`` if any failed. ``durable``: the offset of the event whose
        durable point this is (when it fails, its frame is never sent)."""
        writes, self._writes = self._writes, []
        if self.failure is not None:
            self._keep_unsent(durable)
            raise self.failure
        if writes:
            with contextlib.suppress(Exception):  # looked at below, with the others
                await asyncio.shield(writes[-1][0])
        error: BaseException | None = None
        for future, outcomes, chunk in writes:
            exc = future.exception() if future.done() and not future.cancelled() else None
            if exc is not None:
                error = error or exc
                self._unwritten.extend(outcomes)
                self._lost.extend(chunk)
        if error is not None:
            self._keep_unsent(durable)
            self.failure = JournalUnavailable(error)
            raise self.failure from error

    def _keep_unsent(self, durable: int | None) -> None:
        if durable is not None:
            self._unsent.add(durable)


def _offset(frame: _Frame) -> int:
    return frame[0]


_HANDLERS: dict[str, Callable[[Recorder, Any], Awaitable[None] | None]] = {
    ModelResponse.type: Recorder._on_model_response,
    HistoryChanged.type: Recorder._on_history,
    ToolExecutionStart.type: Recorder._on_tool_started,
    ToolHandleSaved.type: Recorder._on_tool_handle,
    ToolCallResult.type: Recorder._on_tool_result,
    ApprovalRequested.type: Recorder._on_approval,
    InputRequested.type: Recorder._on_input,
    StepStarted.type: Recorder._on_step_started,
    StepFinished.type: Recorder._on_step_finished,
    RunFinished.type: Recorder._on_run_finished,
    RunError.type: Recorder._on_run_error,
}
"""The events that write something, by ``Event.type`` (a dict, not an isinstance chain:
``record`` is called for every token)."""
