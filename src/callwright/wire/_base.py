"""The encoder base both wire protocols build on: framing, headers, dispatch, progress.

An encoder turns each canonical event into payload dicts (its protocol's handlers,
registered with ``@on``) and frames them as SSE bytes last, with one ``sse()``. Only
the per-token events (text, reasoning and tool-argument deltas) skip the dict: each
protocol describes them with a ``DeltaFrame``, and the base writes them as one
f-string around json's C string escaper from the frame's fixed head. That is the
difference between about 0.3 and 1 µs per token, and a token is most of what a run
sends; the dict form of the same frame stays available (``payloads``) for wrappers
such as AG-UI's sub-run attribution.

Written by hand: an SSE frame here is one line (``data: {json}``, no ids, no
retries), and what an encoder is made of (the dispatch from canonical events to
payloads, the per-call progress documents) is ours; SSE libraries such as
``sse-starlette`` frame a response's generator, which ``_stream`` does over raw ASGI.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias, TypeVar, get_args

from ..events import (
    Event,
    ReasoningDelta,
    RunError,
    TextDelta,
    ToolCallArgs,
    ToolCallResult,
    ToolProgress,
)
from ._common import quote, to_json

Payload: TypeAlias = dict[str, Any]
"""One wire event as a JSON object, before it is framed."""

Payloads: TypeAlias = Payload | list[Payload] | None
"""What a handler returns: one payload, several (sent in order), or nothing."""

_Handler = TypeVar("_Handler", bound=Callable[..., Payloads])
_Writer: TypeAlias = "Callable[[SSEEncoder, Any], bytes]"
_HANDLES = "_wire_handles"
_EVENT_TYPES = tuple(event.type for event in get_args(Event))


def sse_headers(marker: Mapping[str, str] | None = None) -> dict[str, str]:
    """The response headers of an event stream, with a protocol's ``marker`` headers.

    ``no-cache`` and ``x-accel-buffering: no`` keep proxies (nginx) from holding
    frames back; ``marker`` goes before the latter only to keep the header order
    the AI SDK response has always had.
    """
    return {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "connection": "keep-alive",
        **(marker or {}),
        "x-accel-buffering": "no",
    }


HEADERS = sse_headers()
"""The headers of an SSE response (AG-UI's, and the base of the AI SDK's)."""
HEARTBEAT = b": ping\n\n"
"""An SSE comment, sent while a stream is silent: every SSE parser skips it (AG-UI's
and the AI SDK's clients among them), and proxies see traffic. Never kept in the
journal: a replay is the live stream's frames without its heartbeats."""


def sse(payload: Payload) -> bytes:
    """One SSE frame, ``data: {json}\\n\\n``, LF only (CRLF breaks the AG-UI JS client)."""
    return b"data: " + to_json(payload) + b"\n\n"


def sse_all(payloads: Payloads) -> bytes:
    """The frames of a handler's result, in order; ``b""`` for nothing."""
    if payloads is None:
        return b""
    if isinstance(payloads, dict):
        return sse(payloads)
    return b"".join([sse(payload) for payload in payloads])


def payloads_of(frames: Iterable[bytes]) -> list[Payload]:
    """The JSON objects of SSE frames (``data: {json}``; other lines are skipped)."""
    out: list[Payload] = []
    for frame in frames:
        for block in frame.split(b"\n\n"):
            if block.startswith(b"data: {"):
                payload = json.loads(block[6:])
                if isinstance(payload, dict):
                    out.append(payload)
    return out


def major_version(raw: str) -> int | None:
    """The major version in ``"6"``, ``"v6"`` or ``"6.0.326"``; None if it is no number."""
    major = raw.strip().lstrip("v").split(".")[0]
    return int(major) if major.isdecimal() else None


def on(*events: type[Event]) -> Callable[[_Handler], _Handler]:
    """Registers an encoder method as the payload handler of these canonical events."""

    def mark(method: _Handler) -> _Handler:
        setattr(method, _HANDLES, tuple(event.type for event in events))
        return method

    return mark


@dataclass(frozen=True, slots=True)
class DeltaFrame:
    """A per-token frame: ``{"type": type, <id_key>: id, <delta_key>: delta}``.

    One description gives both the payload and the fast path's fixed text, so the
    two cannot drift apart.
    """

    type: str
    """The frame's ``type`` on the wire."""
    id_key: str
    """The key of the id of the message or call the delta belongs to."""
    delta_key: str = "delta"
    """The key of the text."""

    def payload(self, ident: str, delta: str) -> Payload:
        return {"type": self.type, self.id_key: ident, self.delta_key: delta}

    def head(self) -> str:
        """The frame's text before the id (``data: {"type":"...","<id_key>":``)."""
        return f'data: {{"type":{quote(self.type)},{quote(self.id_key)}:'

    def middle(self) -> str:
        """The frame's text between the id and the delta (``,"<delta_key>":``)."""
        return f",{quote(self.delta_key)}:"


class ProgressBook:
    """The progress document of each running call, from its first report to its result.

    Both protocols show a call's progress as one document the client replaces in
    place (an AG-UI activity message, an AI SDK data part), so every report resends
    the whole of it: ``{toolCallId, toolName, status, text?, fraction?}`` and whatever
    the protocol adds (partial output, a sub-run). The documents are live: a payload
    that holds one must be serialised before the next event.
    """

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: dict[str, Payload] = {}

    def of(self, call_id: str, tool_name: str) -> Payload:
        """The call's document, opened (``status: running``) on first use."""
        document = self._open.get(call_id)
        if document is None:
            document = {"toolCallId": call_id, "toolName": tool_name, "status": "running"}
            self._open[call_id] = document
        return document

    def report(self, event: ToolProgress) -> Payload:
        """The call's document with the reported text and fraction."""
        document = self.of(event.call_id, event.tool_name)
        document["text"] = event.text
        if event.fraction is not None:
            document["fraction"] = event.fraction
        return document

    def close(self, result: ToolCallResult) -> Payload | None:
        """The call's document, forgotten and marked complete or error; None if it had none."""
        document = self._open.pop(result.call_id, None)
        if document is not None:
            document["status"] = "complete" if result.state == "output-available" else "error"
        return document


class SSEEncoder:
    """Encodes one run's canonical events as SSE frames (``bytes``; ``b""`` = nothing).

    A protocol subclasses it, describes its three per-token frames (``text_delta``,
    ``reasoning_delta``, ``args_delta``) and registers a payload handler per event
    with ``@on``; events without a handler send nothing. The deltas go out through
    the fast path, built from those descriptions, not through handlers. One instance
    per run: it holds the run's open progress documents (``progress``) and whatever
    the protocol remembers between events.
    """

    headers: ClassVar[Mapping[str, str]] = HEADERS
    """The HTTP response headers of the stream."""
    trailer: ClassVar[bytes] = b""
    """Sent after the last frame (``close()``)."""
    text_delta: ClassVar[DeltaFrame]
    reasoning_delta: ClassVar[DeltaFrame]
    args_delta: ClassVar[DeltaFrame]
    skip_empty_deltas: ClassVar[bool] = False
    """Whether a delta with no text sends nothing (AG-UI requires a non-empty delta)."""
    closers: ClassVar[Mapping[str, tuple[str, str | None]]] = {}
    """Wire event type that opens something -> (the type that closes it, the key of the
    id both carry, None when there is one at a time): what ``continue_after`` closes."""
    other_ends: ClassVar[Mapping[str, str]] = {}
    """Another type that closes what a closing type of ``closers`` closes -> that type."""
    close_fields: ClassVar[Mapping[str, Payload]] = {}
    """Fields a closing frame of ``continue_after`` needs besides its type and id."""

    _payload_table: ClassVar[dict[str, Callable[[Any, Any], Payloads]]] = {}
    _frame_table: ClassVar[dict[str, _Writer]]
    """Every canonical event type -> its frame writer: a plain dict indexed without
    ``.get()``, the cheapest lookup per token."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Builds the class's dispatch tables once, so a new encoder (one per run) costs
        next to nothing."""
        super().__init_subclass__(**kwargs)
        names: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            for name, member in vars(klass).items():
                for event_type in getattr(member, _HANDLES, ()):
                    names[event_type] = name
        cls._payload_table = {event_type: getattr(cls, name) for event_type, name in names.items()}
        frames: dict[str, _Writer] = dict.fromkeys(_EVENT_TYPES, _nothing)
        frames.update({event_type: _framed(h) for event_type, h in cls._payload_table.items()})
        if hasattr(cls, "args_delta"):
            frames.update(
                _delta_frames(
                    cls.text_delta, cls.reasoning_delta, cls.args_delta, cls.skip_empty_deltas
                )
            )
        cls._frame_table = frames

    def __init__(self, *, strip_paths: bool = False) -> None:
        self.progress = ProgressBook()
        self._frames = self._frame_table
        self.strip_paths = strip_paths
        """Whether run errors reach the client with their absolute file paths cut
        (``without_paths``): what a server sets, so that an error does not map its disk."""

    def error_text(self, message: str) -> str:
        """A run error's message as this encoder sends it (see ``strip_paths``)."""
        return without_paths(message) if self.strip_paths else message

    def encode(self, event: Event) -> bytes:
        """The event's frames, ready to send."""
        try:
            write = self._frames[event.type]
        except KeyError:  # not a canonical event
            return b""
        return write(self, event)

    def payloads(self, event: Event) -> list[Payload]:
        """The event's wire events as dicts (what ``encode`` frames)."""
        handler = self._payload_table.get(event.type)
        out = handler(self, event) if handler is not None else None
        if out is None:
            return []
        return [out] if isinstance(out, dict) else out

    def error(self, message: str, code: str) -> bytes:
        """The error frame for a failure outside the run (the server's own)."""
        return sse_all(self._payload_table[RunError.type](self, RunError(message, code)))

    def close(self) -> bytes:
        """What ends the stream after the last event."""
        return self.trailer

    def cut_short(self, message: str, code: str) -> bytes:
        """The error frame and the stream's end: what a stream ends with when the run
        never finishes (a journal keeps it for a replay of a segment that died)."""
        return self.error(message, code) + self.close()

    def continue_after(self, frames: Iterable[bytes]) -> list[bytes]:
        """The frames that close what a stream's kept ``frames`` left open (last opened
        first), with this encoder set to go on after them.

        A segment continued in another process appends to the log of one that died
        mid-step: sent before its own frames, these make the whole log one valid stream
        for a client that replays it (a text message, tool call or step is never left
        open, nor opened twice).
        """
        closed_by = {close: key for close, key in self.closers.values()}
        kinds = ("text_delta", "reasoning_delta", "args_delta")
        deltas = tuple(getattr(self, k).head().encode() for k in kinds if hasattr(self, k))
        opened: dict[tuple[str, Any, Any], Payload] = {}
        for payload in payloads_of(f for f in frames if not f.startswith(deltas)):
            kind = payload.get("type")
            if not isinstance(kind, str):
                continue
            self._continues(payload)
            sub = payload.get("subagentRunId")  # AG-UI: a delegate's own, apart
            if kind in self.closers:
                close, key = self.closers[kind]
                ident = payload.get(key) if key else None
                closing: Payload = {"type": close, **self.close_fields.get(close, {})}
                if key:
                    closing[key] = ident
                if sub is not None:
                    closing["subagentRunId"] = sub
                opened[(close, ident, sub)] = closing
                continue
            close = self.other_ends.get(kind, kind)
            if close in closed_by:
                key = closed_by[close]
                opened.pop((close, payload.get(key) if key else None, sub), None)
        return [sse(payload) for payload in reversed(opened.values())]

    def _continues(self, payload: Payload) -> None:
        """Takes in one payload of the stream this encoder goes on after (``continue_after``)."""

    # --- per-token events: a payload for wrappers, a fast frame for ``encode`` -------

    @on(TextDelta)
    def _text_delta(self, e: TextDelta) -> Payloads:
        if not e.delta and self.skip_empty_deltas:
            return None
        return self.text_delta.payload(e.id, e.delta)

    @on(ReasoningDelta)
    def _reasoning_delta(self, e: ReasoningDelta) -> Payloads:
        if not e.delta and self.skip_empty_deltas:
            return None
        return self.reasoning_delta.payload(e.id, e.delta)

    @on(ToolCallArgs)
    def _args_delta(self, e: ToolCallArgs) -> Payloads:
        if not e.delta and self.skip_empty_deltas:
            return None
        return self.args_delta.payload(e.call_id, e.delta)


_PART = r"[^\s/'\"`,;:()<>\[\]{}|]"
_POSIX_PATH = re.compile(rf"(?<![\w.~:/-])/(?:{_PART}+/)+({_PART}*)")
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:\\(?:[^\s\\'\"]+\\)+([^\s\\'\"]*)")


def without_paths(text: str) -> str:
    """``text`` with absolute file paths cut to their last part (``…/model.gguf``): an
    error a client sees must not map the server's disk."""
    text = _POSIX_PATH.sub(lambda m: f"…/{m.group(1)}", text)
    return _WINDOWS_PATH.sub(lambda m: f"…\\{m.group(1)}", text)


def _delta_frames(
    text: DeltaFrame, reasoning: DeltaFrame, args: DeltaFrame, skip_empty: bool
) -> dict[str, _Writer]:
    """The per-token frame writers of a protocol class, one f-string each.

    Built once per class from its ``DeltaFrame``s, so the frames' fixed text sits in
    the closures' cells instead of being looked up per token. They write the same
    bytes as ``sse()`` of the delta payload handlers (a test holds them to it).
    """
    text_head, text_middle = text.head(), text.middle()
    reasoning_head, reasoning_middle = reasoning.head(), reasoning.middle()
    args_head, args_middle = args.head(), args.middle()

    def text_frame(_: SSEEncoder, e: TextDelta) -> bytes:
        if skip_empty and not e.delta:
            return b""
        return f"{text_head}{quote(e.id)}{text_middle}{quote(e.delta)}}}\n\n".encode()

    def reasoning_frame(_: SSEEncoder, e: ReasoningDelta) -> bytes:
        if skip_empty and not e.delta:
            return b""
        return f"{reasoning_head}{quote(e.id)}{reasoning_middle}{quote(e.delta)}}}\n\n".encode()

    def args_frame(_: SSEEncoder, e: ToolCallArgs) -> bytes:
        if skip_empty and not e.delta:
            return b""
        return f"{args_head}{quote(e.call_id)}{args_middle}{quote(e.delta)}}}\n\n".encode()

    return {
        TextDelta.type: text_frame,
        ReasoningDelta.type: reasoning_frame,
        ToolCallArgs.type: args_frame,
    }


def _nothing(encoder: SSEEncoder, event: Any) -> bytes:
    return b""


def _framed(handler: Callable[[Any, Any], Payloads]) -> _Writer:
    def encode(encoder: SSEEncoder, event: Any) -> bytes:
        return sse_all(handler(encoder, event))

    return encode
