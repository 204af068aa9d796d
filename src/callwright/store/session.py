"""What the journal gives a run: the start it continues from, and the recorder it writes
with. The run itself is made above the store (``callwright._journaled``): the store
imports nothing of the agent or the loop."""

from __future__ import annotations

import dataclasses
from typing import Protocol

from .._run_start import RunStart
from ..approvals import ThreadApprovals, reissued_ids
from ..state import RunState
from ..toolbox import Toolbox
from .base import Journal, Started
from .recorder import Recorder


class JournaledRun(Protocol):
    """What the recorder is made from: a started run's state document and toolbox."""

    @property
    def state(self) -> RunState: ...

    @property
    def toolbox(self) -> Toolbox: ...


def run_start(started: Started, request: RunStart) -> RunStart:
    """The start of a journaled segment: the journal's history, decisions, state, ids,
    remembered approvals, principal and model settings, over ``request`` (what the
    client sent, or a continued segment's spec). The request keeps only what the journal
    does not hold: its front-end tools, whether they may override, its forwarded props."""
    segment = started.segment
    return dataclasses.replace(
        request,
        messages=started.history,
        prompt=(),
        decisions=started.decisions,
        state=started.state,
        run_id=segment.request_id,  # what the client called this run; the journal's spans requests
        thread_id=segment.thread_id,
        thread_approvals=ThreadApprovals(started.thread_approvals),
        principal=segment.principal or None,
        settings=started.settings,
        approval_ids=reissued_ids(started.open_approvals)
        if started.open_approvals
        else request.approval_ids,
        resumed_handles=started.handles,
    )


def recorder_for(
    journal: Journal, started: Started, run: JournaledRun, *, asynchronous: bool = False
) -> Recorder:
    """The recorder of a run: its state document, and its toolbox's idempotent tools."""

    def idempotent(name: str) -> bool:
        tool = run.toolbox.get(name)
        return tool is not None and tool.idempotent

    return Recorder(
        journal, started, state=run.state, idempotent=idempotent, asynchronous=asynchronous
    )
