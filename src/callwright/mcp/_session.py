"""One MCP session per server and process: opened on first use, reopened after a failure.

The SDK's ``Client`` is an async context manager whose task group must be entered and
left by the same task, while callwright calls tools from many tasks (one per call, in
many runs). So one *owner* task per connection enters the ``Client`` and holds it open
until ``close``; calls use the client from their own tasks, which the SDK allows.

Written here rather than taken from the SDK's ``ClientSessionGroup``: that group is
itself an async context manager (the same one-task rule) and has no notion of a
broken session to reopen. A connection belongs to the event loop that opened it; a
run on another loop (``run_sync`` makes one per call) opens its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from mcp import Client

from ..toolbox import ToolsetUnavailable

log = logging.getLogger("callwright.mcp")

CLOSE_GRACE = 5.0
"""Seconds a session has to close (and its stdio server to exit) before it is cancelled."""


class Connection:
    """The open session of one MCP server, made by ``factory`` on first use; ``watch``
    runs beside it while it is open (a 2026 server's change notifications)."""

    def __init__(
        self,
        name: str,
        factory: Callable[[], Client],
        watch: Callable[[Client], Coroutine[Any, Any, None]] | None = None,
    ) -> None:
        self.name = name
        self._factory = factory
        self._watch = watch
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    @property
    def client(self) -> Client | None:
        """The open client on this loop, if any."""
        if self._client is not None and self._loop is asyncio.get_running_loop():
            return self._client
        return None

    async def open(self) -> Client:
        """The open client, opening (or reopening) the session first if needed."""
        client = self.client
        if client is not None:
            return client
        async with self._guard():
            client = self.client
            if client is not None:
                return client
            await self._drop()
            return await self._start()

    async def broken(self, client: Client) -> None:
        """The session failed under a call: close it so the next call opens a new one."""
        if self._client is client:
            log.warning("MCP server %r: the session failed; it reopens on the next call", self.name)
            await self.close()

    async def close(self) -> None:
        """End the session (and the server process it started), if one is open here."""
        owner, closing = self._owner, self._closing
        self._client = self._owner = self._closing = None
        if owner is None or closing is None:
            return
        if owner.get_loop() is not asyncio.get_running_loop():
            return  # opened on a loop that is gone or elsewhere: it closes with that loop
        closing.set()
        try:
            await asyncio.wait_for(asyncio.shield(owner), CLOSE_GRACE)
        except TimeoutError:
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner
        except Exception:  # the session failed while closing: nothing left to close
            pass

    def _guard(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    async def _drop(self) -> None:
        """Forget a session of another loop, or close a dead one of this loop."""
        if self._owner is not None:
            await self.close()

    async def _start(self) -> Client:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Client] = loop.create_future()
        closing = asyncio.Event()
        owner = loop.create_task(self._own(ready, closing), name=f"mcp session {self.name}")
        try:
            client = await ready
        except BaseException:
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner
            raise
        self._client, self._owner, self._closing, self._loop = client, owner, closing, loop
        return client

    async def _own(self, ready: asyncio.Future[Client], closing: asyncio.Event) -> None:
        """Holds the session open from this one task until ``close``."""
        try:
            async with self._factory() as client:
                ready.set_result(client)
                watcher: asyncio.Task[None] | None = None
                if self._watch is not None:
                    watcher = asyncio.create_task(self._watch(client))
                try:
                    await closing.wait()
                finally:
                    if watcher is not None:
                        watcher.cancel()
                        with contextlib.suppress(BaseException):
                            await watcher
        except asyncio.CancelledError:
            if not ready.done():
                ready.set_exception(ToolsetUnavailable(f"MCP server {self.name!r}: cancelled"))
            raise
        except BaseException as exc:  # the SDK raises exception groups
            if not ready.done():
                ready.set_exception(
                    ToolsetUnavailable(f"MCP server {self.name!r} could not be reached: {why(exc)}")
                )
            else:
                log.warning("MCP server %r: the session ended: %s", self.name, why(exc))
        finally:
            if self._owner is asyncio.current_task():
                self._client = self._owner = self._closing = None


def why(exc: BaseException) -> str:
    """A one-line reason from an exception or the first leaf of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
