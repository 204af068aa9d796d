"""A run segment continued by another process: what keeps a run moving when its process dies.

The segment's work is journaled by the run journal (operations before and after
each tool, a commit at each step's end, the frames for replay), and the segment's row
holds its ``SegmentSpec`` (the request's wire, front-end tools and forwarded props),
written in the transaction that begins it. While the process that took the request is
alive, the request's stream runs the segment. When that process is gone, the process
that wins its claim (``_engine``) continues the segment from the journal
(``Journal.reopen``): the completed steps and tool results are read back, never
re-run; a tool that had started is in doubt unless it is idempotent (the resumed run asks its
``reconcile`` hook and reports the outcome); the
run then goes on headless, appending to the same event log, which any replica's
``GET /runs/{id}/events?after=N`` follows.

Why the journal and not DBOS workflows: a continued segment resumes from what the
journal committed, and a workflow's step ids must replay in the same order on
recovery, which a run that streams tool progress in parallel cannot promise. The
journal's operation rows keep the step guarantee (a result is read back, a started call
is not re-run unless idempotent) without that constraint. For the same reason a run's
frames go to the journal's event log rather than a DBOS stream: each chunk is written in
the same transaction as the operation rows it precedes (a tool's ``started`` row with
the frames before it), so a reader on another replica never sees a tool begin that the
journal does not know of. (Tool workers, whose progress has no such row, use a DBOS
stream.)
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

from .._journaled import journaled_run
from .._run_start import RunStart
from ..events import Event, RunStarted
from ..store import Journal, Started, recorder_for
from ..tool import Tool
from ..wire import agui, aisdk
from ..wire._base import SSEEncoder
from ..wire._common import client_tools_from

if TYPE_CHECKING:
    from ..run import Agent, Run

log = logging.getLogger("callwright.durable")

Protocol = Literal["agui", "aisdk"]


@dataclass(slots=True)
class SegmentSpec:
    """What another process needs to continue a segment: plain data, stored as JSON in
    the segment's journal row (``Journal.begin(spec=...)``). The journal holds
    everything else."""

    request_id: str
    """The segment's request id."""
    thread_id: str
    """The thread the segment runs in."""
    principal: str = ""
    """Who started it (the journal checks it on every read)."""
    protocol: Protocol = "agui"
    """Which wire the segment's frames are encoded for."""
    protocol_1: bool = True
    """AG-UI: whether the client speaks protocol 1.0."""
    protocol_version: str | None = None
    """AG-UI: the version declared on ``RUN_STARTED`` (None: the client declared none)."""
    ai_version: int = 6
    """AI SDK: the ``ai`` major version of the client."""
    message_id: str | None = None
    """AI SDK: the assistant message the stream continues."""
    client_tools: list[dict[str, Any]] = field(default_factory=list)
    """The front-end tools the request declared (``{name, description, parameters}``)."""
    allow_client_override: bool = False
    """Whether a front-end tool could replace a server tool."""
    forwarded_props: dict[str, Any] = field(default_factory=dict)
    """AG-UI ``forwardedProps`` of the request."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> SegmentSpec:
        """The spec a ``to_json`` wrote (fields a newer version added are left out);
        ``ValueError`` for text that is not one."""
        try:
            data = json.loads(text)
            known = {f.name for f in fields(cls)}
            return cls(**{k: v for k, v in data.items() if k in known})
        except (TypeError, AttributeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a segment spec ({type(exc).__name__})") from None

    def encoder(self) -> SSEEncoder:
        """A fresh encoder for the segment's wire (the server's, with paths cut)."""
        if self.protocol == "aisdk":
            return aisdk.AISDKEncoder(
                version=self.ai_version, message_id=self.message_id, strip_paths=True
            )
        return agui.AGUIEncoder(
            protocol_1=self.protocol_1, protocol_version=self.protocol_version, strip_paths=True
        )

    def tools(self) -> list[Tool]:
        return client_tools_from(self.client_tools, "the segment's tools")

    def request(self) -> RunStart:
        """What the spec kept of the segment's request; the journal holds the rest."""
        return RunStart(
            client_tools=tuple(self.tools()),
            allow_client_override=self.allow_client_override,
            forwarded_props=self.forwarded_props,
        )


def spec_of_encoder(encoder: SSEEncoder) -> dict[str, Any]:
    """The encoder's settings as ``SegmentSpec`` fields."""
    if isinstance(encoder, aisdk.AISDKEncoder):
        return {
            "protocol": "aisdk",
            "ai_version": encoder.version,
            "message_id": encoder.message_id,
        }
    assert isinstance(encoder, agui.AGUIEncoder)
    return {
        "protocol": "agui",
        "protocol_1": encoder.protocol_1,
        "protocol_version": encoder.protocol_version,
    }


def tool_definitions(tools: list[Tool]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools
    ]


def continued_run(
    agent: Agent[Any, Any], started: Started, spec: SegmentSpec, deps: Any = None
) -> Run[Any, Any]:
    """The run of a reopened segment, from the journal's history, the decisions kept for
    its calls and the thread's remembered approvals, for the principal that started it
    (``deps``: what ``deps_factory(None, principal)`` made; None: the agent's own): the
    journal's start over what the spec kept of the request, as a new segment's is."""
    return journaled_run(agent, started, spec.request(), deps)


def _closing(journal: Journal, spec: SegmentSpec, encoder: SSEEncoder) -> list[bytes]:
    """The frames that close what the dead process's stream left open, with ``encoder`` set
    to go on after it (read and parsed off the event loop: a log can be long)."""
    kept = journal.events_after(spec.request_id, 0, spec.principal)
    return encoder.continue_after(frame for _, frame in kept)


async def drive(journal: Journal, run: Run[Any, Any], started: Started, spec: SegmentSpec) -> str:
    """Run a reopened segment to its end with no client attached, journaling its frames
    after the ones its first process wrote. Returns the segment's status."""
    recorder = recorder_for(journal, started, run, asynchronous=True)
    recorder.offset = started.event_offset
    encoder = spec.encoder()

    begun = started.event_offset > 0
    closing = await asyncio.to_thread(_closing, journal, spec, encoder) if begun else []

    async def record(event: Event) -> None:
        # a stream whose start was kept must not start again (a reader would restart it)
        frame = b"" if begun and isinstance(event, RunStarted) else encoder.encode(event)
        durable = recorder.record(event, frame)
        if durable is not None:
            await durable

    try:
        for frame in closing:
            recorder.record_frame(frame)
        async for event in run.events():
            await record(event)
    finally:
        await asyncio.shield(recorder.finish("interrupted", "the continuing process stopped"))
    return recorder.status or "unknown"
