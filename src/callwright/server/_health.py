"""What ``/readyz`` checks: the journal answers, the model is configured, DBOS runs.

Each check answers ``"ok"`` or a short reason that names no secret, URL or path (a
probe's answer is public: see ``Endpoints.handle_ready``). The journal's check is one
trivial read in a worker thread, waited for at most ``READY_TIMEOUT_SECONDS``: a
stalled database makes the probe answer 503 in that time, never hang it or the
loop. While that read is still stuck, later probes wait on the same one instead of
starting another, so a stalled database never takes more than one thread.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..models.base import Model, unconfigured
from ..store import Journal

if TYPE_CHECKING:
    from ..durable import DurableRuntime
    from ..run import Agent

READY_TIMEOUT_SECONDS = 2.0
"""How long ``/readyz`` waits for the journal's database before it answers 503."""
OK = "ok"


@dataclass(eq=False)
class Readiness:
    """The readiness checks of one set of endpoints."""

    agent: Agent[Any, Any]
    """Whose model is checked (the one it has when asked)."""
    journal: Journal | None = None
    durable: DurableRuntime | None = None
    timeout: float = READY_TIMEOUT_SECONDS
    """Seconds the journal's check waits for its database."""
    _ping: asyncio.Future[None] | None = field(default=None, init=False, repr=False)

    async def checks(self) -> dict[str, str]:
        """Each check's ``"ok"`` or reason (``journal`` and ``durable`` only when used)."""
        found: dict[str, str] = {}
        if self.journal is not None:
            found["journal"] = await self._journal()
        found["model"] = _model(self.agent.model)
        if self.durable is not None:
            found["durable"] = OK if self.durable.launched else "the DBOS runtime is not running"
        return found

    async def _journal(self) -> str:
        assert self.journal is not None
        if self._ping is None or self._ping.done():
            self._ping = asyncio.ensure_future(asyncio.to_thread(self.journal.ping))
            self._ping.add_done_callback(_retrieved)
        try:
            await asyncio.wait_for(asyncio.shield(self._ping), self.timeout)
        except TimeoutError:
            return f"the database did not answer within {self.timeout:g} s"
        except Exception as exc:  # its text may hold a URL or a path: the type only
            return f"the database failed to answer ({type(exc).__name__})"
        return OK


def _model(model: Model) -> str:
    try:
        reason = unconfigured(model)
    except Exception as exc:  # a model's own check that fails says so, and nothing more
        return f"the model's configuration check failed ({type(exc).__name__})"
    return OK if reason is None else reason


def _retrieved(future: asyncio.Future[Any]) -> None:
    """A ping that failed after its probe stopped waiting is not an unretrieved error."""
    if not future.cancelled():
        future.exception()
