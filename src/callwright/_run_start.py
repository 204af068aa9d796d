"""``RunStart``: everything a run starts from, as one value.

A run is started from a request (the server's decoders), from the journal (a new
segment of a thread, or a dead process's segment continued elsewhere) or from code
(``Agent.start``). Each of them makes a ``RunStart``, and ``Agent.start_from`` turns
it into a run: one place that knows how a run begins, and a value each layer can make
without importing the agent (the store and the wire sit below ``run/``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .approvals import ApprovalIds, ThreadApprovals
from .call import Decision
from .elicitation import InputAnswer
from .messages import Message
from .models._settings import ModelSettings
from .tool import Tool


@dataclass(frozen=True, slots=True)
class RunStart:
    """What a run starts from, everything but its dependencies (``deps`` are the
    app's objects, given to ``Agent.start_from`` beside it).

    Frozen: a layer that needs another value makes one (``dataclasses.replace``), so a
    start handed on is the start that was made.
    """

    messages: Sequence[Message] = ()
    """The conversation so far (the journal's, or the client's copy without one)."""
    prompt: Sequence[Message] = ()
    """New input after ``messages``: reported as the run's new messages."""
    decisions: Mapping[str, Decision | InputAnswer] | None = None
    """Verified answers to the pending approvals and questions, by call id."""
    client_tools: Sequence[Tool] = ()
    """The front-end tools the request declared."""
    allow_client_override: bool = False
    """Whether a front-end tool may replace a server tool of the same name."""
    state: dict[str, Any] | None = None
    """The run's shared state document (None: none given, the run starts empty)."""
    run_id: str | None = None
    """The run's id (None: a new one)."""
    thread_id: str | None = None
    """The thread the run belongs to (None: a new one)."""
    thread_approvals: ThreadApprovals | None = None
    """The tools a human allowed for the rest of the thread (None: a fresh set)."""
    approval_ids: ApprovalIds | None = None
    """What makes the ids of approval requests (None: random ids)."""
    forwarded_props: Mapping[str, Any] | None = None
    """What the front end forwarded for the agent's code (``ToolContext.forwarded_props``)."""
    traceparent: str | None = None
    """The W3C trace context of the segment that paused, to link a resume to it."""
    principal: str | None = None
    """Whose run it is (``ToolContext.principal``); None: no authentication."""
    settings: ModelSettings | None = None
    """The run's own model settings, over the agent's field by field."""
    depth: int = 0
    """How deep in delegation the run is (0: a top-level run)."""
    name: str | None = None
    """The agent's name in traces (None: ``Agent.name``)."""
    resumed_handles: Mapping[str, Any] | None = None
    """The handles open calls saved before their process stopped, by call id (the
    journal's; see ``ToolContext.resumed_handle``)."""
