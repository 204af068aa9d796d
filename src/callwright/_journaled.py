"""Starting a journaled run: the journal checks the request and begins a segment, the
agent starts the run from what the journal gave back. Above the store and below the
server and the durable layer, which both start runs this way."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ._run_start import RunStart
from .approvals import edit_rules
from .context import DepsT
from .messages import Message
from .models._settings import ModelSettings
from .store import Answer, Journal, Recorder, Started, recorder_for, run_start
from .store.base import EditValidator
from .tool import Tool

if TYPE_CHECKING:
    from .run import Agent, Run


def edit_validators(agent: Agent[Any, Any]) -> dict[str, EditValidator | None]:
    """Per tool: its validator where a human may edit its arguments, else None."""
    return edit_rules(agent.toolbox)


def journaled_run(
    agent: Agent[DepsT, Any], started: Started, request: RunStart, deps: DepsT | None = None
) -> Run[DepsT, Any]:
    """The run of a segment the journal began or reopened: the journal's start over
    ``request`` (see ``store.run_start``). The one builder of a run from the journal."""
    return agent.start_from(run_start(started, request), deps=deps)


def start_journaled(
    journal: Journal,
    agent: Agent[DepsT, Any],
    thread_id: str,
    request_id: str,
    messages: list[Message],
    answers: list[Answer],
    *,
    client_tools: Iterable[Tool] = (),
    allow_client_override: bool = False,
    state: dict[str, Any] | None = None,
    deps: DepsT | None = None,
    principal: str = "",
    closing: bytes = b"",
    settings: ModelSettings | None = None,
    forwarded_props: Mapping[str, Any] | None = None,
) -> tuple[Run[DepsT, Any], Recorder]:
    """Verify the request against the journal and start the run it asks for (synchronous:
    the journal is called on this thread; the server uses ``begin_journaled``).

    The run starts from the journal's history, not the client's: ``messages`` (the
    client's copy) contributes only new user messages and client-tool results,
    ``answers`` its approval decisions and answers to tools' questions. The run starts
    with the thread's remembered approvals (``remember="thread"``) as the journal
    keeps them, and ``principal`` as ``ToolContext.principal`` (``""``: None). ``deps``
    reach the tools as
    ``ToolContext.deps`` (None: the agent's own). Raises ``Rejected`` with nothing
    written when the request does not match the thread. ``closing``: the frame that
    ends a replay of this segment if it never finishes. ``settings``: this run's model
    settings, kept on the run: its later segments (a resume, a continuation in another
    process) use them without being given them again. ``forwarded_props``: what the
    front end forwarded for the agent's code (``ToolContext.forwarded_props``).
    """
    request = _request(
        thread_id,
        request_id,
        messages,
        client_tools,
        allow_client_override,
        state,
        principal,
        settings,
        forwarded_props,
    )
    started = _begin(journal, agent, request, answers, closing)()
    run = journaled_run(agent, started, request, deps)
    return run, recorder_for(journal, started, run)


async def begin_journaled(
    journal: Journal,
    agent: Agent[DepsT, Any],
    thread_id: str,
    request_id: str,
    messages: list[Message],
    answers: list[Answer],
    *,
    client_tools: Iterable[Tool] = (),
    allow_client_override: bool = False,
    state: dict[str, Any] | None = None,
    deps: DepsT | None = None,
    principal: str = "",
    closing: bytes = b"",
    settings: ModelSettings | None = None,
    forwarded_props: Mapping[str, Any] | None = None,
    spec: str = "",
) -> tuple[Run[DepsT, Any], Recorder]:
    """``start_journaled`` off the event loop: the check and the new segment run on the
    journal's writer thread, and the recorder writes there too (``Recorder``'s
    asynchronous mode). Stream the run with ``await recorder.record(...)`` where it
    returns an awaitable, and ``await recorder.finish()`` at the end. ``spec``: what
    another process needs to continue the segment (``Journal.begin``)."""
    request = _request(
        thread_id,
        request_id,
        messages,
        client_tools,
        allow_client_override,
        state,
        principal,
        settings,
        forwarded_props,
    )
    return await begin_segment(
        journal, agent, request, answers, deps=deps, closing=closing, spec=spec
    )


async def begin_segment(
    journal: Journal,
    agent: Agent[DepsT, Any],
    request: RunStart,
    answers: list[Answer],
    *,
    deps: DepsT | None = None,
    closing: bytes = b"",
    spec: str = "",
) -> tuple[Run[DepsT, Any], Recorder]:
    """``begin_journaled`` for a request already decoded into a ``RunStart`` (the
    server's way): its ``thread_id`` and ``run_id`` (the segment's request id) are
    required, its messages are the client's copy, its state is taken only for a new
    thread; ``answers`` are its claims for the journal to check."""
    begin = functools.partial(_begin(journal, agent, request, answers, closing), spec=spec)
    submitted = journal.submit(begin)
    if submitted is None:
        raise RuntimeError("begin_journaled must be called on an event loop")
    started = await submitted
    try:
        run = journaled_run(agent, started, request, deps)
    except BaseException:
        journal.release(started.segment, [])  # nothing will run it: settle it
        raise
    return run, recorder_for(journal, started, run, asynchronous=True)


def _request(
    thread_id: str,
    request_id: str,
    messages: list[Message],
    client_tools: Iterable[Tool],
    allow_client_override: bool,
    state: dict[str, Any] | None,
    principal: str,
    settings: ModelSettings | None,
    forwarded_props: Mapping[str, Any] | None,
) -> RunStart:
    return RunStart(
        messages=messages,
        client_tools=tuple(client_tools),
        allow_client_override=allow_client_override,
        state=state,
        run_id=request_id,
        thread_id=thread_id,
        forwarded_props=forwarded_props,
        principal=principal or None,
        settings=settings,
    )


def _begin(
    journal: Journal,
    agent: Agent[Any, Any],
    request: RunStart,
    answers: list[Answer],
    closing: bytes,
) -> functools.partial[Started]:
    """The journal's check and new segment for ``request``, to call on its thread."""
    if not request.thread_id or not request.run_id:
        raise ValueError("a journaled run needs a thread id and a request id")
    return functools.partial(
        journal.begin,
        request.thread_id,
        request.run_id,
        [*request.messages, *request.prompt],
        answers,
        edit_validators(agent),
        request.state,
        principal=request.principal or "",
        closing=closing,
        settings=request.settings,
    )
