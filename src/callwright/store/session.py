"""Starting a journaled run: what the server does for each request on a thread."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..context import DepsT
from ..messages import Message
from ..run import Agent, Run
from ..tool import Tool
from .base import Answer, EditValidator, Journal
from .recorder import Recorder


def edit_validators(agent: Agent[Any, Any]) -> dict[str, EditValidator | None]:
    """Per tool: its validator where a human may edit its arguments, else None."""
    return {t.name: (t.validate if t.allow_edits else None) for t in agent.toolbox}


def start_journaled(
    journal: Journal,
    agent: Agent[DepsT, Any],
    thread_id: str,
    request_id: str,
    new_messages: list[Message],
    answers: list[Answer],
    *,
    client_tools: Iterable[Tool] = (),
    allow_client_override: bool = False,
    state: dict[str, Any] | None = None,
    deps: DepsT | None = None,
) -> tuple[Run[DepsT, Any], Recorder]:
    """Verify the request against the journal and start the run it asks for.

    The run starts from the journal's history, not the client's: the client
    only contributes new user messages and answers to pending calls. ``deps``
    reach the tools as ``ToolContext.deps`` (None: the agent's own). Raises
    ``Rejected`` with nothing written when an answer does not match.
    """
    started = journal.begin(
        thread_id, request_id, new_messages, answers, edit_validators(agent), state
    )
    run = agent.start(
        messages=started.history,
        decisions=started.decisions,
        client_tools=client_tools,
        allow_client_override=allow_client_override,
        state=started.state,
        deps=deps,
        run_id=request_id,  # what the client called this run; the journal's run spans requests
        thread_id=thread_id,
    )
    started.committed = list(run.messages)  # the same objects: commits diff by identity
    return run, Recorder(journal, started, run)
