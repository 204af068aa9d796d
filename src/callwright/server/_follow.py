"""One journal reader per followed live run, however many clients follow it.

A replay that has caught up with a live run used to poll the journal on its own, a
read in a worker thread every 50 ms per client: 200 clients following one run queued
4,000 reads a second behind every other request's thread work (other requests waited
up to 1 s). Now the followers of one segment share a ``_Tail``: one task reads the new
frames and every follower sends them from memory.

Each read that finds frames is one socket write per follower (about 0.1-0.3 ms through
h11 and Starlette), carrying every frame since its last. A text stream's frames become
readable every 0.5 s (the recorder's flush), but a run whose journal writes more often
(tool rows, step ends) would have had a write per follower per 50 ms poll: a run's
followers now share ``WRITES_PER_SECOND``, the reader waiting longer between reads the
more followers it has. Followers at the same place send the same joined bytes, and
followers asking for the same part of a log at once share its read (``shared_read``).
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from ..store import Journal

POLL_SECONDS = 0.05
"""The shortest wait between two reads of a followed segment."""
WRITES_PER_SECOND = 1000
"""Socket writes a second that one run's followers share: with more than
``WRITES_PER_SECOND * POLL_SECONDS`` followers, each gets the new frames less often
(every 0.2 s with 200) in fewer, larger writes."""
SEND_FRAMES = 512
"""Frames a follower joins and sends at once (a slow reader's backlog goes in parts)."""
KEEP_FRAMES = 1024
"""Frames kept in memory before those every follower has sent are dropped."""
WAKE_GROUP = 8
"""Followers woken in one turn of the event loop when new frames are read: each one's
send costs about a millisecond, so 200 woken at once held every other request 0.2 s."""

_Key = tuple[int, int, str, str]
_TAILS: dict[_Key, _Tail] = {}
_tokens = itertools.count()
_READING: dict[tuple[object, ...], list[asyncio.Future[Any]]] = {}
_SHARING: set[asyncio.Task[None]] = set()
_T = TypeVar("_T")


async def shared_read(read: Callable[..., _T], *args: object) -> _T:
    """``read(*args)`` in a worker thread, once for every caller that asks the same while
    it runs: 200 followers arriving at once read a run's log once, not 200 times (each
    trip to a thread and back costs the event loop, and under load the GIL's hand-over),
    and send the same bytes. A caller that joins gets the answer of a read begun a moment
    before it asked, as if it had asked then. The callers are answered a group at a
    time (``WAKE_GROUP``), other work running between."""
    same = (a if isinstance(a, str | int) else id(a) for a in args)  # a journal by identity
    key = (id(asyncio.get_running_loop()), read, *same)
    waiting = _READING.get(key)
    if waiting is None:
        waiting = _READING[key] = []
        task = asyncio.create_task(_read_for(key, waiting, read, args))
        _SHARING.add(task)
        task.add_done_callback(_SHARING.discard)
    future: asyncio.Future[_T] = asyncio.get_running_loop().create_future()
    waiting.append(future)
    return await future


async def _read_for(
    key: tuple[object, ...],
    waiting: list[asyncio.Future[Any]],
    read: Callable[..., Any],
    args: tuple[object, ...],
) -> None:
    try:
        result = await asyncio.to_thread(read, *args)
    except Exception as exc:  # each caller raises it, as its own read would have
        del _READING[key]
        await _wake(waiting, error=exc)
    except BaseException:
        del _READING[key]
        for future in waiting:
            future.cancel()
        raise
    else:
        del _READING[key]  # a caller from now on reads anew
        await _wake(waiting, result)


def _read(
    store: Journal, segment: str, last: int, principal: str
) -> tuple[bool, list[tuple[int, bytes]]]:
    """Whether the segment had ended, then its kept frames after ``last``: read in that
    order, no frame written before its end is missed."""
    done = store.segment_done(segment, principal)
    return done, store.events_after(segment, last, principal, 4)


class _Tail:
    """The frames of one live segment kept after ``start``, read by one task for all of
    its followers; each follower's place is the offset of the last frame it sent."""

    def __init__(self, key: _Key, store: Journal, segment: str, principal: str, start: int) -> None:
        self.key = key
        self.start = start
        self.last = start
        self.offsets: list[int] = []
        self.frames: list[bytes] = []
        self.done = False
        self.error: BaseException | None = None
        self.places: dict[int, int] = {}
        self._joined: dict[tuple[int, int], bytes] = {}
        self._waiting: list[asyncio.Future[None]] = []
        self._waking: set[asyncio.Task[None]] = set()
        self._task = asyncio.create_task(self._read_all(store, segment, principal))

    async def _read_all(self, store: Journal, segment: str, principal: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                began = loop.time()
                done, rows = await asyncio.to_thread(_read, store, segment, self.last, principal)
                if rows:
                    self.last = rows[-1][0]
                    kept = [(offset, frame) for offset, frame in rows if frame]
                    self.offsets += [offset for offset, _ in kept]
                    self.frames += [frame for _, frame in kept]
                    self._joined.clear()
                    self._trim()
                    self._notify()
                    if len(kept) >= SEND_FRAMES:
                        continue  # a backlog: read on at once
                elif done:
                    self.done = True
                    self._notify()
                    return
                await asyncio.sleep(self._pause() - (loop.time() - began))
        except Exception as exc:  # each follower raises it, as its own read would have
            self.error = exc
            self._notify()

    def _pause(self) -> float:
        """Seconds between the starts of two reads: each read with frames is a write per
        follower, so more followers are written to less often (see ``WRITES_PER_SECOND``)."""
        return max(POLL_SECONDS, len(self.places) / WRITES_PER_SECOND)

    def _join(self, first: int, end: int) -> bytes:
        """Frames ``first`` to ``end`` as one piece, joined once for every follower."""
        key = (self.offsets[first], self.offsets[end - 1])
        data = self._joined.get(key)
        if data is None:
            data = self._joined[key] = b"".join(self.frames[first:end])
        return data

    def _notify(self) -> None:
        """Wakes the waiting followers a group at a time, other work running between."""
        waiting, self._waiting = self._waiting, []
        if waiting:
            task = asyncio.create_task(_wake(waiting))
            self._waking.add(task)
            task.add_done_callback(self._waking.discard)

    def changed(self) -> asyncio.Future[None]:
        """Done when new frames are read, or the segment ended."""
        future = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        return future

    def _trim(self) -> None:
        """Drops the frames every follower has sent, once more than ``KEEP_FRAMES``."""
        if len(self.frames) <= KEEP_FRAMES:
            return
        low = min(self.places.values(), default=self.last)
        cut = bisect.bisect_right(self.offsets, low)
        if cut:
            del self.offsets[:cut], self.frames[:cut]
            self.start = max(self.start, low)

    async def frames_after(self, token: int, last: int) -> AsyncIterator[bytes]:
        """The frames after offset ``last`` as they are read, until the segment ends."""
        self.places[token] = last
        while True:
            if self.error is not None:
                raise self.error
            first = bisect.bisect_right(self.offsets, last)
            if first < len(self.offsets):
                end = min(first + SEND_FRAMES, len(self.offsets))
                last = self.offsets[end - 1]
                data = self._join(first, end)
                self.places[token] = last
                yield data
                continue
            if self.done:
                return
            await self.changed()

    def leave(self, token: int) -> None:
        self.places.pop(token, None)
        if not self.places and _TAILS.get(self.key) is self:
            del _TAILS[self.key]
            self._task.cancel()


async def _wake(
    waiting: list[asyncio.Future[Any]], result: object = None, error: Exception | None = None
) -> None:
    for i in range(0, len(waiting), WAKE_GROUP):
        if i:
            await asyncio.sleep(0)
        for future in waiting[i : i + WAKE_GROUP]:
            if future.done():
                continue
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)


def follow_live(
    store: Journal, segment: str, principal: str, last: int
) -> AsyncIterator[bytes] | None:
    """The frames of a live segment after offset ``last`` (up to which a follower has read
    its log), from the segment's shared reader (started when none runs), until the
    segment ends; None while the running reader began after ``last`` (the follower reads
    on by itself until it is past it)."""
    key = (id(asyncio.get_running_loop()), id(store), segment, principal)
    tail = _TAILS.get(key)
    if tail is None or tail.error is not None:
        tail = _TAILS[key] = _Tail(key, store, segment, principal, last)
    return _join(tail, last)


def join_live(
    store: Journal, segment: str, principal: str, last: int
) -> AsyncIterator[bytes] | None:
    """As ``follow_live``, but only from a reader already running: a replay that has just
    read a part of the log joins it without another read of its own to find out whether
    it has caught up (200 followers arriving at once made 200 more reads in threads)."""
    tail = _TAILS.get((id(asyncio.get_running_loop()), id(store), segment, principal))
    return None if tail is None or tail.error is not None else _join(tail, last)


def _join(tail: _Tail, last: int) -> AsyncIterator[bytes] | None:
    if tail.start > last:
        return None
    token = next(_tokens)
    tail.places[token] = last
    return _follow(tail, token, last)


async def first_frame(store: Journal, segment: str, principal: str) -> bytes | None:
    """The segment's first kept frame once it is kept (None if it ends with none), waited
    for through the segment's shared reader: followers that arrive before a run keeps
    its first frame poll the journal once between them."""
    key = (id(asyncio.get_running_loop()), id(store), segment, principal)
    tail = _TAILS.get(key)
    if tail is None or tail.error is not None or tail.start > 0:
        tail = _TAILS[key] = _Tail(key, store, segment, principal, 0)
    token = next(_tokens)
    tail.places[token] = 0
    try:
        while not tail.frames:
            if tail.error is not None:
                raise tail.error
            if tail.done:
                return None
            await tail.changed()
        return tail.frames[0]
    finally:
        tail.leave(token)


async def _follow(tail: _Tail, token: int, last: int) -> AsyncIterator[bytes]:
    try:
        async for data in tail.frames_after(token, last):
            yield data
    finally:
        tail.leave(token)
