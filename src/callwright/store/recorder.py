"""Journals one segment of a run from its canonical events.

Commit points are where a step is whole: ``StepFinished`` and the run's last
event. Operation rows are written as they happen (a tool's ``started`` row
before it runs, ``completed`` with its output after), because they are what a
restarted server reads to tell a finished tool from an interrupted one.
"""

from __future__ import annotations

from typing import Any

from ..events import (
    ApprovalRequested,
    Event,
    ModelResponse,
    RunError,
    RunFinished,
    StepFinished,
    ToolCallResult,
    ToolExecutionStart,
)
from ..messages import message_to_dict
from .base import Journal, PendingRecord, Started, digest


class Recorder:
    def __init__(self, journal: Journal, started: Started, run: Any) -> None:
        self.journal = journal
        self.started = started
        self.segment = started.segment
        self.run = run
        self.offset = 0  # offsets count this segment's events (one request's stream)
        self.op_seq = journal.next_operation(self.segment.run_id)
        self._events: list[tuple[int, str, bytes]] = []
        self._pending: list[PendingRecord] = []
        self.status: str | None = None

    def record(self, event: Event, frame: bytes = b"") -> int:
        """Journal one event (and the wire frame sent for it); returns its offset."""
        self.offset += 1
        self._events.append((self.offset, event.type, frame))
        run_id = self.segment.run_id
        if isinstance(event, ModelResponse):
            self._plan(event)
        elif isinstance(event, ToolExecutionStart):
            self.journal.mark_operation(self.segment, event.call_id, "started", events=self._take())
        elif isinstance(event, ToolCallResult):
            output = {
                "state": event.state,
                "content": event.content,
                "is_error": event.state != "output-available",
            }
            self.journal.mark_operation(
                self.segment, event.call_id, "completed", output, events=self._take()
            )
        elif isinstance(event, ApprovalRequested):
            self._pending.append(
                PendingRecord(
                    self.segment.thread_id,
                    run_id,
                    event.call_id,
                    "approval",
                    event.tool_name,
                    event.arguments,
                    event.approval_id,
                    event.reason_for_call,
                )
            )
        elif isinstance(event, StepFinished):
            self._commit()
        elif isinstance(event, RunFinished):
            for p in event.pending:
                if p.kind == "client":
                    self._pending.append(
                        PendingRecord(
                            self.segment.thread_id,
                            run_id,
                            p.call_id,
                            "client",
                            p.tool_name,
                            p.arguments,
                        )
                    )
            self._commit(event.status, event.reason)
        elif isinstance(event, RunError):
            self._commit("error", event.message)
        return self.offset

    def finish_unrecorded(self, status: str, reason: str) -> None:
        """The stream ended without a last event (the client went away mid-run)."""
        if self.status is None:
            self._commit(status, reason)

    def _take(self) -> list[tuple[int, str, bytes]]:
        events, self._events = self._events, []
        return events

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
                }
            )
        self.op_seq += len(rows)
        self.journal.plan_operations(self.segment, rows)

    def _commit(self, status: str | None = None, reason: str | None = None) -> None:
        self.journal.commit(
            self.segment,
            self.started.committed,
            self.run.messages,
            self.run.state.data,
            self._pending,
            self._take(),
            status,
            reason,
        )
        self._pending = []
        if status is not None:
            self.status = status
