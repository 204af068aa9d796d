"""MCP tool calls in flight: their progress, cancellation, and the questions they ask.

A call runs as its own task, followed by the tool's executor until it finishes, the run
cancels it, or the server asks the human a question (elicitation). How a question is
asked depends on the session's revision:

* **2025-11-25**: the server sends ``elicitation/create`` in the middle of the call. The
  question ends the executor with ``InputRequired`` while the MCP call itself stays
  open, *parked* here under an unguessable handle; the run pauses. When a resumed run
  brings the answer, the executor hands it to the parked call and follows it again,
  which may finish or ask once more. A parked call nobody answers within
  ``input_timeout`` is told the human cancelled; one whose process is gone (a restart)
  cannot be answered, and ends with an error result saying to call the tool again.
* **2026-07-28**: the call returns its questions and the server's sealed state; nothing
  stays open. The run pauses on a question whose state says how to call again
  (``_rounds``), and the answer calls the tool again, here or after a restart.

A call the server answers with a task (the tasks extension) saves the task's id as the
call's handle (``ToolContext.save_handle``); a run recovered after its process stopped
runs the call again with that handle, and the call re-attaches to the task
(``reattach``): polled again, never called again.

A sampling request (when served, see ``_sampling``) is answered with the model of the run
the asking call belongs to. Which call a 2025 question (or sampling request) belongs to:
it comes on the session with nothing that names the call, so it goes to the one call in
flight. With several in flight, the question waits until the others have finished (the
asking call cannot finish before it is answered); if they do not finish in time it is
refused, rather than shown to the wrong call or another run's human. A 2026 round's
sampling requests are answered from inside the call's own task, where a context variable
says exactly which call asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from ..call import Cancelled, ToolError, ToolResult
from ..context import ToolContext
from ..elicitation import InputAnswer, InputRequest, InputRequired
from . import _rounds
from ._convert import fraction, progress_text, to_result
from ._rounds import Round, TaskGone
from ._sampling import Sampling, refusal, refused, sample
from ._session import why

_ROUTE: ContextVar[Route | None] = ContextVar("callwright_mcp_route", default=None)

ROUTE_POLL = 0.05
"""Seconds between looks at the calls in flight while a question waits for its caller."""


@dataclass(slots=True)
class Question:
    """An elicitation the server is waiting on, and where its answer goes."""

    params: types.ElicitRequestParams
    answer: asyncio.Future[InputAnswer]


@dataclass(eq=False)
class Route:
    """One call in flight: its task, where its progress and questions go."""

    ctx: ToolContext[Any] | None
    questions: asyncio.Queue[Question] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[types.CallToolResult | Round] | None = None
    open: Question | None = None
    """The question the call waits on while parked."""
    samples: int = 0
    """Sampling requests the server made during the call."""

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """The SDK's progress callback: the current run's ``ctx.progress`` (a resumed
        call reports to the run that resumed it)."""
        if self.ctx is not None:
            self.ctx.progress(progress_text(progress, total, message), fraction(progress, total))


Broken = Callable[[Client], Awaitable[None]]


class Calls:
    """The calls of one MCP server's session: in flight, and parked on a question."""

    def __init__(self, server: str, input_timeout: float, sampling: Sampling | None = None) -> None:
        self.server = server
        self.input_timeout = input_timeout
        self.sampling = sampling
        self.routes: list[Route] = []
        self.parked: dict[str, Route] = {}

    # --- the session's elicitation callback --------------------------------------------

    async def elicit(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """Put the server's question to the call that asked, and wait for the human."""
        route = _ROUTE.get() or await self._sole_route()
        if route is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="the client cannot tell which of its running tool calls asks",
            )
        question = Question(params, asyncio.get_running_loop().create_future())
        route.questions.put_nowait(question)
        try:
            answer = await asyncio.wait_for(asyncio.shield(question.answer), self.input_timeout)
        except TimeoutError:
            self._unpark(route)
            return types.ElicitResult(action="cancel")
        content = answer.content if answer.action == "accept" else None
        return types.ElicitResult(action=answer.action, content=content)

    # --- the session's sampling callback (when sampling is served) -----------------------

    async def sample(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        """Answer with the model of the run whose call the server works on (``_sampling``)."""
        route = _ROUTE.get() or await self._sole_route()
        if route is None or self.sampling is None:
            return refused("the client cannot tell which of its running tool calls asks")
        bad = refusal(params)
        if bad is not None:
            return bad
        if route.samples >= self.sampling.max_requests:
            return refused(
                f"this tool call has made its {self.sampling.max_requests} sampling requests"
            )
        route.samples += 1
        return await sample(route.ctx, params, self.sampling)

    async def _sole_route(self) -> Route | None:
        """The one call in flight that could have asked, once the others are done."""
        deadline = asyncio.get_running_loop().time() + self.input_timeout
        while True:
            waiting = [r for r in self.routes if r.open is None]
            if len(waiting) <= 1 or asyncio.get_running_loop().time() > deadline:
                return waiting[0] if len(waiting) == 1 else None
            await asyncio.sleep(ROUTE_POLL)

    # --- calls -------------------------------------------------------------------------

    async def call(
        self,
        client: Client,
        name: str,
        arguments: dict[str, Any],
        ctx: ToolContext[Any] | None,
        broken: Broken,
    ) -> ToolResult:
        """Call ``name`` and follow it to its result (or its first question)."""
        route = Route(ctx)
        if _rounds.modern(client):
            first = Round(server=self.server, tool=name, arguments=arguments)
            work: Awaitable[types.CallToolResult | Round] = _rounds.drive(
                client, first, route.progress, self._keeper(route)
            )
        else:
            work = client.call_tool(name, arguments, progress_callback=route.progress)
        return await self._start(route, work, client, broken)

    async def answer(
        self,
        round_: Round,
        answer: InputAnswer,
        ctx: ToolContext[Any] | None,
        client: Client,
        broken: Broken,
    ) -> ToolResult:
        """A human's answer to a 2026 round's question: the round's next question, or the
        tool called again with the round's answers and the server's state."""
        round_ = _rounds.answered(round_, answer)
        if round_.asking:
            raise InputRequired(_rounds.question(round_))
        if not _rounds.modern(client):
            raise ToolError(
                f"MCP server {self.server!r} no longer speaks the revision that asked "
                "(2026-07-28), so the call did not finish; call the tool again."
            )
        route = Route(ctx)
        work = _rounds.drive(client, round_, route.progress, self._keeper(route))
        return await self._start(route, work, client, broken)

    async def reattach(
        self,
        client: Client,
        name: str,
        arguments: dict[str, Any],
        task_id: str,
        ctx: ToolContext[Any] | None,
        broken: Broken,
    ) -> ToolResult:
        """Follow the task a call became before its process stopped; raises ``TaskGone``
        when the server does not know it (or no longer speaks the revision of tasks)."""
        if not _rounds.modern(client):
            raise TaskGone("the server no longer speaks the 2026-07-28 revision")
        route = Route(ctx)
        round_ = Round(server=self.server, tool=name, arguments=arguments)
        work = _rounds.reattach(client, round_, task_id, route.progress)
        return await self._start(route, work, client, broken)

    def _keeper(self, route: Route) -> _rounds.Keep:
        """Saves the task a call becomes as its handle, for the run it reports to now."""

        def keep(task_id: str) -> None:
            if route.ctx is not None:
                # a task id past the handle's size is followed all the same, unsaved
                with contextlib.suppress(ValueError):
                    route.ctx.save_handle(_rounds.task_handle(self.server, task_id))

        return keep

    async def _start(
        self,
        route: Route,
        work: Awaitable[types.CallToolResult | Round],
        client: Client,
        broken: Broken,
    ) -> ToolResult:
        token = _ROUTE.set(route)
        try:  # the task copies the context: sampling in a 2026 round asks from inside it
            route.task = asyncio.ensure_future(work)
        finally:
            _ROUTE.reset(token)
        self.routes.append(route)
        route.task.add_done_callback(lambda _: self._ended(route))
        return await self._follow(route, route.ctx, client, broken)

    async def resume(
        self,
        answer: InputAnswer,
        ctx: ToolContext[Any] | None,
        client: Client | None,
        broken: Broken,
    ) -> ToolResult:
        """Hand a human's answer to the parked call that asked, and follow it again."""
        state = answer.request.state if answer.request is not None else None
        handle = state.get("handle") if isinstance(state, dict) else None
        route = self.parked.pop(handle, None) if isinstance(handle, str) else None
        question = route.open if route is not None else None
        if route is None or question is None or route.task is None or route.task.done():
            raise ToolError(
                f"The question of MCP server {self.server!r} is no longer open (it expired, or "
                "the server restarted), so the call did not finish; call the tool again."
            )
        route.open = None
        if not question.answer.done():
            question.answer.set_result(answer)
        return await self._follow(route, ctx, client, broken)

    async def _follow(
        self, route: Route, ctx: ToolContext[Any] | None, client: Client | None, broken: Broken
    ) -> ToolResult:
        """Wait for the call to finish, the run to cancel it, or the server to ask."""
        task = route.task
        assert task is not None
        route.ctx = ctx
        cancel = ctx.cancel if ctx is not None else None
        asked = asyncio.ensure_future(route.questions.get())
        stopped = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
        waiting: set[asyncio.Future[Any]] = {task, asked}
        if stopped is not None:
            waiting.add(stopped)
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the executor stops the call (a timeout, a hard cancel)
            task.cancel()  # and waits, bounded, for the server to be told (tasks/cancel)
            await asyncio.wait({task}, timeout=_rounds.CANCEL_GRACE)
            raise
        finally:
            asked.cancel()
            if stopped is not None:
                stopped.cancel()
        if task.done():
            return await self._outcome(task, client, broken)
        if stopped is not None and stopped.done() and cancel is not None:
            task.cancel()  # the SDK tells the server (notifications/cancelled)
            with contextlib.suppress(BaseException):
                await task
            raise Cancelled(cancel.reason)
        raise InputRequired(self._park(route, asked.result()))

    def _park(self, route: Route, question: Question) -> InputRequest:
        handle = secrets.token_urlsafe(18)
        route.open = question
        self.parked[handle] = route
        return _rounds.input_request(question.params, {"server": self.server, "handle": handle})

    def _unpark(self, route: Route) -> None:
        for handle, parked in list(self.parked.items()):
            if parked is route:
                del self.parked[handle]
        route.open = None

    def _ended(self, route: Route) -> None:
        """A call's task is over (finished, failed, cancelled): forget its route."""
        with contextlib.suppress(ValueError):
            self.routes.remove(route)
        self._unpark(route)
        task = route.task
        if task is not None and not task.cancelled():
            task.exception()  # retrieved: a parked call that ended alone logs no warning

    async def _outcome(
        self,
        task: asyncio.Task[types.CallToolResult | Round],
        client: Client | None,
        broken: Broken,
    ) -> ToolResult:
        try:
            result = task.result()
        except asyncio.CancelledError:
            raise Cancelled("the MCP call was cancelled") from None
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED and client is not None:
                await broken(client)
                raise ToolError(
                    f"MCP server {self.server!r} closed the connection during the call "
                    "(it is reconnected on the next call)."
                ) from None
            if _rounds.refused_state(exc):
                raise ToolError(
                    f"MCP server {self.server!r} no longer accepts the state of its question "
                    "(it expired, or the server restarted without a shared request-state "
                    "key), so the call did not finish; call the tool again."
                ) from None
            raise ToolError(f"MCP server {self.server!r}: {exc.message}") from None
        except (ToolError, TaskGone):
            raise
        except Exception as exc:  # a malformed result, an SDK failure: the model sees why
            raise ToolError(f"MCP server {self.server!r}: {why(exc)}") from None
        if isinstance(result, Round):  # a 2026 server asks: the run pauses on the question
            raise InputRequired(_rounds.question(result))
        return to_result(result)
