"""What a running tool can see and do: its call, a cancellation token, progress, state.

``CancelToken`` is written here rather than taken from anyio because a tool needs
all three ways to look at cancellation (poll, raise, await) and child tokens per
call; an ``asyncio.Event`` per token plus a list of children is all it takes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping, Sized
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, Protocol

from typing_extensions import TypeVar

from .call import Cancelled, Decision, ToolError
from .state import RunState
from .usage import Usage

if TYPE_CHECKING:
    from .approvals import ThreadApprovals
    from .elicitation import InputAnswer
    from .events import Event
    from .models.base import Model
    from .telemetry._trace import RunTrace
    from .toolbox import Toolbox

DepsT = TypeVar("DepsT", default=None)
"""The type of the user's dependencies (``Agent[DepsT, ...]``, ``ToolContext[DepsT]``)."""


class CancelToken:
    """Cooperative cancellation, with child tokens that follow their parent."""

    __slots__ = ("_callbacks", "_children", "_event", "reason")

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self._children: set[CancelToken] = set()
        self._callbacks: list[Callable[[], None]] = []
        self.reason: str = ""

    def is_cancelled(self) -> bool:
        return self._event is not None and self._event.is_set()

    def cancel(self, reason: str = "") -> None:
        if self.is_cancelled():
            return
        self.reason = reason
        if self._event is None:
            self._event = asyncio.Event()
        self._event.set()
        for child in list(self._children):
            child.cancel(reason)
        for callback in list(self._callbacks):
            callback()

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Called once on cancellation (at once if already cancelled)."""
        if self.is_cancelled():
            callback()
        else:
            self._callbacks.append(callback)

    def remove_callback(self, callback: Callable[[], None]) -> None:
        with contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    def raise_if_cancelled(self) -> None:
        if self.is_cancelled():
            raise Cancelled(self.reason)

    async def wait(self) -> None:
        """Returns once cancelled; tools race it against their own work."""
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()

    def __await__(self) -> Any:
        return self.wait().__await__()

    def child(self) -> CancelToken:
        token = CancelToken()
        if self.is_cancelled():
            token.cancel(self.reason)
        else:
            self._children.add(token)
        return token

    def release(self, child: CancelToken) -> None:
        """Forget a finished child so long runs do not accumulate tokens."""
        self._children.discard(child)


class LiveGroup(Protocol):
    """Calls started together (the executor's running group), as ``LiveCalls`` sees them."""

    def stop(self, call_id: str, reason: str) -> bool:
        """Stop the call if it is one of the group's and still running."""
        ...

    def live_ids(self) -> list[str]:
        """The ids of the group's calls still running."""
        ...


class LiveCalls:
    """The calls of a run whose tools are running now: how one call is stopped without
    stopping its run (``Run.cancel_call``). The executor adds a group of calls before
    their starts are yielded and drops it when the group is done, so that a call that is
    never stopped costs nothing here; only the event loop touches it."""

    __slots__ = ("_groups",)

    def __init__(self) -> None:
        self._groups: list[LiveGroup] = []

    def add(self, group: LiveGroup) -> None:
        self._groups.append(group)

    def discard(self, group: LiveGroup) -> None:
        with contextlib.suppress(ValueError):
            self._groups.remove(group)

    def stop(self, call_id: str, reason: str) -> bool:
        """Stop the call (once); False when no call of that id is running."""
        return any(group.stop(call_id, reason) for group in self._groups)

    def ids(self) -> list[str]:
        """The running calls' ids, oldest first."""
        return [call_id for group in self._groups for call_id in group.live_ids()]


HANDLE_BYTES = 4096
"""The largest handle a tool may save (``ToolContext.save_handle``), as JSON."""

ProgressSink = Callable[[str, float | None], None]
UpdateSink = Callable[[Any], None]
EventSink = Callable[["Event"], None]


def _ignore_progress(text: str, fraction: float | None) -> None:
    return None


def _ignore_update(partial: Any) -> None:
    return None


@dataclass(frozen=True, slots=True)
class RunScope(Generic[DepsT]):
    """What a step's calls may know about the run they belong to.

    Frozen so that no stage can rewire the run under another: the executor and
    the tools read ids, state, deps and the cancel token from here, and the only
    mutable things it holds are meant to be shared (the state document, the
    usage sink a delegate adds its model calls to, the steering queue the
    executor polls). A delegate asks for a child scope instead of reaching into
    its parent run.
    """

    run_id: str
    """The run's id (unique per request that runs the agent)."""
    thread_id: str
    """The conversation's id: stable across the runs of one thread."""
    toolbox: Toolbox
    """The tools of this run, front-end tools included."""
    state: RunState
    """The run's shared state document."""
    deps: DepsT
    """The user's dependencies for this run (database handles ...)."""
    cancel: CancelToken
    """Cancelled when the run is cancelled or closed."""
    usage: Usage
    """The run's usage: a delegate adds its sub-run's model usage here."""
    model: Model
    """The agent's model: the ``anonymous`` delegate runs on it."""
    input_text: str = ""
    """The run's first user message: what ``_scopes: ["input"]`` hands on."""
    depth: int = 0
    """How deep in delegation this run is (0 for a top-level run)."""
    max_depth: int = 3
    """Delegation deeper than this is refused."""
    steering: Sized = ()
    """Messages queued to steer the run: non-empty means later calls are skipped."""
    trace: RunTrace | None = None
    """The run's tracing, None when tracing is off: the executor starts each call's task
    in the context it gives, where the call's span is current."""
    thread_approvals: ThreadApprovals | None = None
    """The tools a human allowed for the rest of this thread (``Decision(remember=
    "thread")``): the executor approves their calls without asking and adds to it. Shared
    with whoever keeps it between runs (the server, per principal and thread)."""
    forwarded_props: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """What the front end forwarded with the request (AG-UI ``forwardedProps``) for the
    agent's code, never shown to the model; empty when it sent none. Given when the run
    starts (``Agent.start(forwarded_props=...)``) and read-only after."""
    principal: str | None = None
    """Whose run this is: the principal the server authenticated for the request that
    started it (kept by the journal with the run, so a run continued in another process
    has it too); None for a run started without one (no ``authenticate``, or outside a
    server). Delegates' runs inherit it."""
    live_calls: LiveCalls = field(default_factory=LiveCalls)
    """The run's calls whose tools are running now (``Run.cancel_call`` stops one)."""
    resumed_handles: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """The handles calls of this run saved before their process stopped, by call id
    (``ToolContext.save_handle``): each such call runs again with its own
    (``ToolContext.resumed_handle``). Empty but for a run continued from a journal."""

    def child_depth(self, name: str) -> int:
        """The depth of a sub-run started from this scope; refuses one past the limit."""
        if self.depth + 1 > self.max_depth:
            raise ToolError(
                f"Sub-agent '{name}' not started: delegate depth limit ({self.max_depth}) reached."
            )
        return self.depth + 1


@dataclass(slots=True)
class ToolContext(Generic[DepsT]):
    """Handed to a tool that annotates a parameter with ``ToolContext``.

    ``progress`` and ``update`` reach the UI only, never the model.
    """

    call_id: str
    """The id the model gave this call."""
    tool_name: str
    """The tool's name as the model called it."""
    cancel: CancelToken = field(default_factory=CancelToken)
    """This call's token: cancelled with the run, on timeout, or when the call is stopped."""
    run: RunScope[DepsT] | None = None
    """The run this call belongs to (None when a tool is called outside a run)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """The call's ``_`` meta fields (``_outputPath``, ``_instance`` ...)."""
    on_progress: ProgressSink = _ignore_progress
    """Where ``progress`` goes: the run turns it into a tool-progress event for the UI."""
    on_update: UpdateSink = _ignore_update
    """Where ``update`` goes: a partial-output event for the UI."""
    on_event: EventSink = _ignore_update
    """Where a sub-agent's events are forwarded as they come."""
    scope: dict[str, Any] = field(default_factory=dict)
    """The parts of the parent context the call's ``_scopes`` lets through."""
    answer: InputAnswer | None = None
    """A human's answer to the question this call asked (``InputRequired``) when the run
    resumed with one: the tool runs again and goes on from its question."""
    approval: Decision | None = None
    """How the call was approved, when it needed approval: a human's decision (with the
    ``data`` they sent for the tool) or a policy's (``automatic``); None when no approval
    was asked for."""
    idempotency_key: str = ""
    """A key for this call to pass to the external system it changes (a payment
    provider's ``Idempotency-Key``): the same on every retry, recovery, replica and tool
    worker, different for different arguments (``callwright.call.idempotency_key``).
    Empty outside a run."""
    on_handle: UpdateSink = _ignore_update
    """Where ``save_handle`` goes: an event a run's journal keeps with the call."""
    resumed_handle: Any = None
    """What this call saved with ``save_handle`` before its process stopped, when a run
    continued from its journal runs it again: the tool re-attaches to the work the handle
    names (polls it, follows it to its result) instead of starting it again. None on a
    first run, and when nothing was saved."""

    @property
    def deps(self) -> DepsT | None:
        """The user's dependencies for this run."""
        return self.run.deps if self.run is not None else None

    @property
    def principal(self) -> str | None:
        """Whose run this call serves (``RunScope.principal``); None without one."""
        return self.run.principal if self.run is not None else None

    @property
    def forwarded_props(self) -> dict[str, Any]:
        """What the front end forwarded with the request (AG-UI ``forwardedProps``): a copy,
        the run's own stays as it started."""
        return dict(self.run.forwarded_props) if self.run is not None else {}

    @property
    def state(self) -> RunState | None:
        """The run's shared state document."""
        return self.run.state if self.run is not None else None

    def is_cancelled(self) -> bool:
        return self.cancel.is_cancelled()

    def raise_if_cancelled(self) -> None:
        self.cancel.raise_if_cancelled()

    async def cancelled(self) -> None:
        await self.cancel.wait()

    def progress(self, text: str, fraction: float | None = None) -> None:
        """Report status text, and a 0..1 fraction where the tool knows one."""
        self.on_progress(text, fraction)

    def update(self, partial: Any) -> None:
        """Stream a partial output to the UI."""
        self.on_update(partial)

    def save_handle(self, handle: Any) -> None:
        """Save how to find this call's work again (an external job's or task's id), as
        JSON of at most ``HANDLE_BYTES``, for a journaled run to keep with the call.

        A call that saved a handle and whose process stopped before it reported is not in
        doubt: the recovered run runs the tool again with ``resumed_handle`` set, and the
        tool follows that work to its result (or raises ``InDoubt`` when it is gone).
        Without a journal it is ignored.
        """
        try:
            size = len(json.dumps(handle, allow_nan=False).encode())
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a handle must be JSON: {exc}") from None
        if size > HANDLE_BYTES:
            raise ValueError(f"a handle is at most {HANDLE_BYTES} bytes of JSON, not {size}")
        self.on_handle(handle)
