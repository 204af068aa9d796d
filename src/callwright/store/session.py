"""Starting a journaled run: what the server does for each request on a thread."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from ..approvals import ThreadApprovals, edit_rules
from ..context import DepsT
from ..messages import Message
from ..models._settings import ModelSettings
from ..run import Agent, Run
from ..tool import Tool
from .base import Answer, EditValidator, Journal, Started
from .recorder import Recorder


def edit_validators(agent: Agent[Any, Any]) -> dict[str, EditValidator | None]:
    """Per tool: its validator where a human may edit its arguments, else None."""
    return edit_rules(agent.toolbox)


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
    started = journal.begin(
        thread_id,
        request_id,
        messages,
        answers,
        edit_validators(agent),
        state,
        principal=principal,
        closing=closing,
        settings=settings,
    )
    run = _run(agent, started, client_tools, allow_client_override, deps, forwarded_props)
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
    begin = functools.partial(
        journal.begin,
        thread_id,
        request_id,
        messages,
        answers,
        edit_validators(agent),
        state,
        principal=principal,
        closing=closing,
        settings=settings,
        spec=spec,
    )
    submitted = journal.submit(begin)
    if submitted is None:
        raise RuntimeError("begin_journaled must be called on an event loop")
    started = await submitted
    try:
        run = _run(agent, started, client_tools, allow_client_override, deps, forwarded_props)
    except BaseException:
        journal.release(started.segment, [])  # nothing will run it: settle it
        raise
    return run, recorder_for(journal, started, run, asynchronous=True)


def _run(
    agent: Agent[DepsT, Any],
    started: Started,
    client_tools: Iterable[Tool],
    allow_client_override: bool,
    deps: DepsT | None,
    forwarded_props: Mapping[str, Any] | None,
) -> Run[DepsT, Any]:
    segment = started.segment
    run = agent.start(
        messages=started.history,
        decisions=started.decisions,
        client_tools=client_tools,
        allow_client_override=allow_client_override,
        state=started.state,
        deps=deps,
        run_id=segment.request_id,  # what the client called this run; the journal's spans requests
        thread_id=segment.thread_id,
        thread_approvals=ThreadApprovals(started.thread_approvals),
        principal=segment.principal or None,
        settings=started.settings,
        forwarded_props=forwarded_props,
    )
    return run


def recorder_for(
    journal: Journal, started: Started, run: Run[Any, Any], *, asynchronous: bool = False
) -> Recorder:
    """The recorder of a run: its state document, and its toolbox's idempotent tools."""

    def idempotent(name: str) -> bool:
        tool = run.toolbox.get(name)
        return tool is not None and tool.idempotent

    return Recorder(
        journal, started, state=run.state, idempotent=idempotent, asynchronous=asynchronous
    )
