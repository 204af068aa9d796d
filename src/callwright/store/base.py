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

**Threads and the event loop.** The protocol is synchronous: each method is one
short transaction, and an implementation is safe to call from any thread. The
server never calls it on its event loop. Writes go through ``submit``, which
runs them in order on the journal's own writer thread and groups the writes
queued at the same moment into one transaction (``batch``); a segment's writes
between two durable points travel as one ``group``. The loop awaits a write only
where the run must not go on before it is durable (a tool's ``started`` row, its
outcome, the run's end). Reads run in a worker thread (``asyncio.to_thread``). A
slow disk or a locked database therefore delays the runs waiting on a write,
never the loop or the other streams. The synchronous methods stay the library
API (tests, scripts, and ``recover``, which the server calls once at start-up,
before it serves).

**Ownership.** Every thread, run, segment, pending call and event log records
the *principal* that created it (``""`` when the app has no users). A thread is
named by its principal and its id: two principals' threads of one id are two
threads, which never share history, pending calls, state or a lock, so another's
thread is to a principal what an id nobody used is (``begin`` starts a new thread
there). Run ids are global, and a method given another principal's run behaves as
if it did not exist (reads return nothing).

**Processes.** A segment is owned by the process running it (an ``owners`` row
with a lease its heartbeat renews). A request on a thread whose segment is
running under a live owner is refused with 409 ``thread_busy``; recovery (at
start-up, on the heartbeat, or when a request meets such a thread) settles only
runs whose owner is gone (or, with ``settle_gone=False``, leaves them to be
continued elsewhere: ``claim`` and ``reopen``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from .._errors import CallwrightError
from .._errors import Rejected as Rejected  # raised here, and by the approval checks
from ..approvals import EditValidator as EditValidator  # the journal checks edits with them
from ..call import Decision
from ..elicitation import InputAction, InputAnswer, InputRequest
from ..messages import Message
from ..models._settings import ModelSettings

PendingKind = Literal["approval", "client", "input"]
"""What a pending call waits for: a human's approval, a front end's result (a client
tool), or a human's answer to the question a running tool asked (MCP elicitation)."""
T = TypeVar("T")


def canonical_json(value: Any) -> str:
    """One spelling per value: sorted keys, no spaces (what hashes and comparisons use)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


class JournalUnavailable(CallwrightError):
    """The journal could not write what a run needs (a full or read-only disk, a lock
    held too long): the run stops with this message instead of going on unrecorded."""

    def __init__(self, cause: BaseException) -> None:
        shown = str(cause) and not _names_the_server(cause)
        detail = str(cause) if shown else type(cause).__name__
        self.message = f"the run journal could not be written ({detail}); the run was stopped"
        super().__init__(self.message)
        self.cause = cause


def _names_the_server(cause: BaseException) -> bool:
    """Whether the text of ``cause`` may name the database server's host and port, which
    a client must not see: a Postgres driver error's does (SQLite's speaks of the local
    file, "database or disk is full"; the journal's own say what happened)."""
    try:
        import psycopg
    except ImportError:
        return False
    return isinstance(cause, psycopg.Error)


@dataclass(frozen=True, slots=True)
class JournalLimits:
    """What the journal stores at most; beyond it, it keeps a marked excerpt.

    A model reply or a tool result longer than ``max_text_bytes`` is stored cut,
    ending with ``[… truncated by the journal: kept N of M bytes]``; the run in
    progress still has all of it, a later request on the thread sees the cut
    text. A call's arguments over ``max_argument_bytes`` are stored as
    ``{"_truncated": "…"}`` (keep it at least the agent's
    ``Limits.max_argument_bytes``, which refuses such calls before they run). A
    segment's event log stops at ``max_event_log_bytes``: replay then ends with
    an error frame saying the rest was not kept.
    """

    max_text_bytes: int = 1 << 20
    """The longest text (reply, reasoning, tool result, user message) stored whole."""
    max_argument_bytes: int = 1 << 20
    """The largest arguments of one call stored whole."""
    max_event_log_bytes: int = 8 << 20
    """The most frame bytes one segment's event log keeps for replay."""


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
    """The id an answer must carry: an approval's, or a question's (``inp_...``)."""
    reason_for_call: str | None = None
    created_at: float = 0.0
    request: InputRequest | None = None
    """The question of a call of kind ``input``, its ``state`` included (the tool's, kept
    here and never sent to a client)."""


@dataclass(slots=True)
class Answer:
    """What a client sent back for a pending call: a decision, a client tool's result, or
    the answer to a tool's question (kind ``input``, ``approval_id`` the ``inp_...`` id)."""

    kind: PendingKind
    call_id: str | None = None
    approval_id: str | None = None
    approved: bool | None = None
    reason: str | None = None
    tool_name: str | None = None
    arguments: dict[str, Any] | None = None
    """An approval's arguments as the client sent them back (possibly edited)."""
    result: str | None = None
    """A client tool's output, as the model will see it."""
    is_error: bool = False
    action: InputAction | None = None
    """An answer to a question: ``accept``, ``decline`` or ``cancel``."""
    content: dict[str, Any] | None = None
    """An answer to a question: the filled-in form (for ``accept``)."""
    data: Any = None
    """An approval's data for the tool (``ctx.approval.data``); kept with the answer."""
    remember: str | None = None
    """An approval's ``"thread"``: the tool is allowed for the rest of the thread."""


@dataclass(slots=True)
class Segment:
    """One stretch of a run, from a request to the run finishing or waiting again."""

    thread_id: str
    run_id: str
    seq: int
    request_id: str
    id: int = 0
    """The segment's row: what its event log and its ownership are keyed by."""
    principal: str = ""
    """Who started the segment (``""`` without authentication)."""


@dataclass(frozen=True, slots=True)
class Orphan:
    """A running segment whose process is gone, as ``Journal.orphans`` lists it."""

    owner: str
    """The owner (executor) id the segment runs under: claim it before continuing."""
    request_id: str
    """The segment's request id (what ``reopen`` takes)."""
    principal: str
    """Who started the segment."""
    spec: str
    """What ``begin`` was given as ``spec``: how to continue the segment ("" for none:
    it can only be settled, ``settle_orphan``)."""


@dataclass(slots=True)
class Started:
    """What ``Journal.begin`` hands the server: the segment, trusted history, decisions, state."""

    segment: Segment
    history: list[Message]
    decisions: dict[str, Decision | InputAnswer]
    state: dict[str, Any] | None
    next_operation: int = 1
    """The run's next operation number (operations continue across segments)."""
    event_offset: int = 0
    """The last offset of the segment's event log (a segment continued by ``reopen``:
    its recorder goes on after it)."""
    thread_approvals: list[str] = field(default_factory=list)
    """The tools a human allowed for the rest of the thread (``remember="thread"``), oldest
    first: the run starts with them in its ``ThreadApprovals``."""
    settings: ModelSettings | None = None
    """The run's own model settings as journaled (None: the run has none, the agent's
    apply): a resumed or continued segment asks the model as the run's first did."""
    open_approvals: dict[str, str] = field(default_factory=dict)
    """The approvals the thread still waits on after this request's answers, as call id
    to approval id: a call asked again is asked under the id its client already holds."""
    handles: dict[str, Any] = field(default_factory=dict)
    """The handles the open calls saved before their process stopped, by call id
    (``ToolContext.save_handle``): they run again with it, to re-attach to their work."""


class Journal(Protocol):
    """What the server and the ``Recorder`` need from durable storage.

    ``SQLiteJournal`` and ``PostgresJournal`` implement it. See
    the module docstring for threads, ownership and processes.
    """

    limits: JournalLimits
    """What the journal stores at most (the ``Recorder`` caps what it hands over)."""

    def history(self, thread_id: str, principal: str = "") -> list[Message]:
        """The conversation as the server produced it (trusted over the client's copy)."""
        ...

    def state(self, thread_id: str, principal: str = "") -> dict[str, Any] | None: ...

    def pending(self, thread_id: str, principal: str = "") -> list[PendingRecord]: ...

    def begin(
        self,
        thread_id: str,
        request_id: str,
        messages: list[Message],
        answers: list[Answer],
        edits: dict[str, EditValidator | None],
        state: dict[str, Any] | None = None,
        *,
        principal: str = "",
        closing: bytes = b"",
        settings: ModelSettings | None = None,
        spec: str = "",
    ) -> Started:
        """Check the request against the thread and start a segment, atomically.

        ``messages`` is the client's copy of the conversation: its trailing user
        messages are new, the rest is taken only to start a new thread, and
        tool results the journal has not seen become client answers. ``state``
        is taken only for a new thread (a journaled thread's state is the
        journal's). The thread is ``principal``'s ``thread_id`` (another
        principal's thread of that id is not looked at: this one is new). Raises
        ``Rejected`` (and writes nothing) for a thread already running (409
        ``thread_busy``), a run id used before (409), or a forged, replayed,
        cross-thread or edited approval (or answer to a question, or one sent the
        wrong way: 409 ``answer_mismatch``), or a result for a call never issued.
        ``Started`` carries the verified decisions (a question's answer with the
        question as stored), those kept for a resumed run's calls that were
        decided but never run, and the thread's remembered approvals.
        ``closing`` is the frame that ends a replay of the segment if it never
        finishes (recovery appends it). ``settings``: the run's own model settings,
        kept on the run (over those it has, for a resumed run); ``Started.settings``
        are the run's as kept, given now or by an earlier segment. ``spec`` is what
        another process needs to continue the segment if this one dies (opaque text,
        written with the segment; ``orphans`` hands it back): only a segment with one is
        continued elsewhere, the others are settled.
        """
        ...

    def next_operation(self, run_id: str) -> int: ...

    def plan_operations(
        self, segment: Segment, rows: list[dict[str, Any]], events: Any = ()
    ) -> None:
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
        """A tool's ``started`` / ``completed`` / ``handle`` row, committed at once (with
        pending events). A ``started`` row's ``output`` is None or ``{"edited": arguments}``:
        what an approver's edit made the call run with, for recovery to reconcile it by; a
        ``handle`` row's is the handle the tool saved (see ``ToolContext.save_handle``)."""
        ...

    def append_events(self, segment: Segment, events: list[tuple[int, str, bytes]]) -> None:
        """Frames for replay, written between commit points."""
        ...

    def commit(
        self,
        segment: Segment,
        start: int | None,
        messages: list[Message],
        state: dict[str, Any] | None,
        pending: list[PendingRecord],
        events: list[tuple[int, str, bytes]],
        status: str | None = None,
        reason: str | None = None,
    ) -> None:
        """One step's writes in one transaction: the history from ``start`` on (None:
        unchanged), the state (None: unchanged), pending calls, frames, the run's end."""
        ...

    def events_after(
        self, request_id: str, offset: int, principal: str = "", chunks: int | None = None
    ) -> list[tuple[int, bytes]]:
        """The segment's kept frames after ``offset`` (from at most ``chunks`` stored chunks)."""
        ...

    def has_events(self, request_id: str, principal: str = "") -> bool: ...

    def expired(self, request_id: str, principal: str = "") -> bool:
        """Whether the segment's event log was deleted under the retention setting."""
        ...

    def segment_done(self, request_id: str, principal: str = "") -> bool: ...

    def live_segment(self, thread_id: str, principal: str = "") -> str | None:
        """The request id of the thread's running segment (None when nothing runs in it)."""
        ...

    def release(
        self,
        segment: Segment,
        unwritten: list[tuple[str, Any]] | None = None,
        *,
        frames: Sequence[tuple[int, str, bytes]] = (),
    ) -> None:
        """The process is done with the segment. If it is still running in the journal
        (a write failed), settle it now or, failing that, on the next heartbeat;
        ``unwritten`` are tool outcomes (call id, output) that could not be written,
        ``frames`` the frames (offset, kind, frame) the client was sent whose writes
        failed: the settled log keeps those it lacks, in offset order, before its
        closing frame."""
        ...

    def recover(self, idempotent: set[str]) -> list[str]:
        """Settle the runs whose owner is gone. Returns their ids."""
        ...

    def gone_owners(self) -> list[str]:
        """Owners that are gone and still own running segments, not yet taken by a live
        owner (``orphans`` lists the segments a durable layer can continue)."""
        ...

    def orphans(self, *, own: bool = False) -> list[Orphan]:
        """The running segments whose owner is gone and not held by another live owner
        (unclaimed, claimed by this journal's owner, or by one that is gone too), each
        with its ``spec`` ("" where it has none). ``own``: also those under this
        journal's own owner id that this journal does not run (a former process with the
        same id)."""
        ...

    def settle_orphan(self, request_id: str, principal: str | None = None) -> bool:
        """Settle a gone owner's running segment that cannot be continued (no ``spec``)
        as recovery would: False when it is not running or its owner is live."""
        ...

    def claim(self, gone_owner: str) -> bool:
        """Take ``gone_owner`` over for this journal's owner: True for exactly one caller
        across processes (and again for it)."""
        ...

    def with_open_calls(self, request_ids: list[str]) -> set[str]:
        """Those of the requests (segments) whose run has a tool call planned or started:
        a continued segment may make it again (a finished one it takes from here)."""
        ...

    def reopen(
        self, request_id: str, idempotent: set[str], *, principal: str | None = None
    ) -> Started | None:
        """Continue a gone (or claimed) owner's running segment here: its history rebuilt
        as recovery would, but the run left running; None if it is not there to take."""
        ...

    def batch(self) -> AbstractContextManager[None]:
        """Run the calls made inside in one transaction where the backend can; each
        call still succeeds or fails whole."""
        ...

    def group(self) -> AbstractContextManager[None]:
        """The calls made inside succeed or fail together (one call, as ``batch`` sees it)."""
        ...

    def ping(self) -> None:
        """Raise if the database does not answer one trivial read of the journal's tables
        (what a readiness probe asks). It blocks like any read: call it off the loop, and
        bound the wait there."""
        ...

    def submit(self, fn: Callable[..., T], /, *args: Any) -> asyncio.Future[T] | None:
        """Run ``fn(*args)`` (this journal's writes) on its writer thread, in order.

        Called on an event loop: a future resolved on that loop once the write is
        committed (or failed); elsewhere None.
        """
        ...

    def close(self) -> None: ...
