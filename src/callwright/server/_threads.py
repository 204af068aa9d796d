"""One thread, one run at a time: the threads this process is streaming a run on.

A second request on a thread (the same principal and thread id) while a run
streams on it is refused with 409 ``thread_busy``: two runs would answer the
same pending calls and write two branches of one history. It is refused, not
queued: a queued request would hold its connection open for as long as the
first run takes (an approval can wait for hours) and then run on a history it
never saw. One exception keeps stopping and going on smooth: when the running
request's client has already disconnected, its run is only winding down (its
tools get ``cancel_grace`` to stop), so the next request waits for that, up to
``settle`` seconds, before it is refused.

In process only; with a journal, the journal also refuses a thread that another
process is running.

The tools a human allowed "for the rest of this thread" (``Decision(remember=
"thread")``) are kept here too, per principal and thread (``RememberedApprovals``), for
a server without a journal: in memory, so a restart forgets them and the thread's next
call of such a tool asks again. With a journal, the journal keeps them (every replica
and a restarted server see them).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from dataclasses import dataclass, field

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from ..approvals import ThreadApprovals
from ..wire import WireError

ThreadKey = tuple[str | None, str]
"""(principal, thread id): two principals' threads never share a key."""


@dataclass(eq=False)
class Lease:
    """A request's hold on its thread, released when its response has been sent (or
    when the request is refused before that)."""

    threads: RunningThreads | None
    """The registry it belongs to; None for a request with no thread to hold."""
    key: ThreadKey | None = None
    """The thread held."""
    released: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the thread is free again."""
    closing: bool = False
    """Whether the request's client has gone (its run is only winding down)."""

    def release(self) -> None:
        """Free the thread (idempotent)."""
        if self.threads is not None and self.key is not None:
            self.threads.release(self)
        self.released.set()

    def hold(self, response: Response) -> Response:
        """``response``, releasing the thread once it has been sent in full."""
        return _Held(response, self) if self.key is not None else response


class RememberedApprovals:
    """Each thread's ``ThreadApprovals``, bounded: at most ``threads`` threads in all and
    ``per_principal`` per authenticated principal (the least recently used is forgotten
    first, so one user's threads never push out another's), of at most ``per_thread``
    tools each. A forgotten approval only means a human is asked again. An
    ``OrderedDict`` is the whole LRU: no cache library earns its place for it."""

    def __init__(
        self, threads: int = 10_000, per_principal: int = 1_000, per_thread: int = 64
    ) -> None:
        if not 0 < per_principal <= threads or per_thread < 1:
            raise ValueError("need 0 < per_principal <= threads and per_thread >= 1")
        self._threads: OrderedDict[ThreadKey, ThreadApprovals] = OrderedDict()
        self._owned: dict[str, OrderedDict[ThreadKey, None]] = {}
        self.limit = threads
        self.per_principal = per_principal
        self.per_thread = per_thread

    def of(self, principal: str | None, thread_id: str) -> ThreadApprovals:
        """The thread's remembered approvals (the same object on every request of it)."""
        key = (principal, thread_id)
        approvals = self._threads.get(key)
        if approvals is not None:
            self._threads.move_to_end(key)
            if principal is not None:
                self._owned[principal].move_to_end(key)
            return approvals
        approvals = self._threads[key] = ThreadApprovals(limit=self.per_thread)
        if principal is not None:
            mine = self._owned.setdefault(principal, OrderedDict())
            mine[key] = None
            while len(mine) > self.per_principal:
                self._forget(next(iter(mine)))
        while len(self._threads) > self.limit:
            self._forget(next(iter(self._threads)))
        return approvals

    def _forget(self, key: ThreadKey) -> None:
        del self._threads[key]
        principal = key[0]
        if principal is not None:
            mine = self._owned[principal]
            del mine[key]
            if not mine:
                del self._owned[principal]

    def __len__(self) -> int:
        return len(self._threads)


class RunningThreads:
    """The threads with a run streaming in this process, and what their humans allowed
    for the rest of the thread (``approvals``)."""

    def __init__(self, settle: float = 10.0) -> None:
        self._held: dict[ThreadKey, Lease] = {}
        self.settle = settle
        """How long a request waits for a thread whose client has gone to wind down."""
        self.approvals = RememberedApprovals()
        """The tools allowed for the rest of each thread (``remember: "thread"``)."""

    async def acquire(self, principal: str | None, thread_id: str | None) -> Lease:
        """The thread's lease, or a 409 ``thread_busy`` while another request runs on it."""
        if thread_id is None:  # a new thread: the run makes its id, nobody else knows it
            return Lease(None)
        key = (principal, thread_id)
        holder = self._held.get(key)
        if holder is not None and holder.closing:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(holder.released.wait(), self.settle)
            holder = self._held.get(key)
        if holder is not None:
            raise WireError(
                "a run is already streaming on this thread; wait for it to finish "
                "(one run per thread at a time)",
                "thread_busy",
                409,
            )
        lease = Lease(self, key)
        self._held[key] = lease
        return lease

    def release(self, lease: Lease) -> None:
        if lease.key is not None and self._held.get(lease.key) is lease:
            del self._held[lease.key]

    def __len__(self) -> int:
        return len(self._held)


class _Held(Response):
    """Sends the wrapped response, watching for the client leaving, then frees the thread."""

    def __init__(self, response: Response, lease: Lease) -> None:
        super().__init__(status_code=response.status_code)
        self.response = response
        self.lease = lease

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def watched() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.lease.closing = True
            return message

        try:
            await self.response(scope, watched, send)
        finally:
            self.lease.release()
