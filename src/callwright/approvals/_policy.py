"""Who decides whether a call runs without asking anyone, and in what order.

Three things can decide, in this order:

1. The agent's policy (``Agent(approval=policy)``) sees every call first: the agent's
   own tools, front-end tools and MCP tools alike. ``approved``, ``denied`` and
   ``user-approval`` are final; ``not-applicable`` (or ``None``, or ``False``)
   defers to the tool.
2. The tool's own ``requires_approval`` (a bool, a predicate or a policy).
3. A call that would ask a human is approved without asking when a human allowed
   its tool "for the rest of this thread" (``Decision(remember="thread")``), kept in
   the thread's ``ThreadApprovals``. A policy's denial is never overridden by it.

Calls decided by 1-3 without a human are *automatic*: they reach the event stream as
``ApprovalResolved(automatic=True)``, which AI SDK 7 clients see as the automatic
approval chunks ``streamText`` itself sends.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .._errors import ConfigurationError
from ..tool import ApprovalVerdict, Tool

REMEMBERED = "approved for the rest of this thread"
"""The reason an automatic approval gives when a human allowed the tool for the thread."""


@dataclass(frozen=True, slots=True)
class ApprovalQuery:
    """One call, as an agent's approval policy sees it before anything runs."""

    call_id: str
    """The id the model gave the call."""
    tool_name: str
    """The tool called."""
    arguments: dict[str, Any]
    """The call's parameters (meta fields split off), as the model wrote them."""
    tool: Tool
    """The tool itself (its ``requires_approval``, ``client``, ``meta``...)."""
    client: bool
    """Whether a front end runs the tool (an AG-UI ``tools`` entry, a client tool)."""
    thread_id: str
    """The conversation the call belongs to."""
    deps: Any = None
    """The run's dependencies (the principal, a database handle...)."""


AgentApprovalPolicy = Callable[[ApprovalQuery], "ApprovalVerdict | bool | None"]
"""``Agent(approval=...)``: a function of each call returning an ``ApprovalVerdict``;
``True`` asks a human, ``False`` or ``None`` is ``not-applicable`` (the tool decides)."""


class ThreadApprovals:
    """The tools a human allowed for the rest of one thread; the thread's later calls of
    them are approved automatically. At most ``limit`` tools: the oldest is forgotten
    first, so a client cannot grow it without bound (and a forgotten tool only asks again).
    A bounded, insertion-ordered set is a few lines over ``OrderedDict``: no cache
    library is needed for it.
    """

    def __init__(self, tools: Iterable[str] = (), *, limit: int = 256) -> None:
        if limit < 1:
            raise ConfigurationError("limit must be at least 1")
        self.limit = limit
        self._tools: OrderedDict[str, None] = OrderedDict()
        for name in tools:
            self.remember(name)

    def allows(self, tool_name: str) -> bool:
        """Whether a human allowed this tool for the rest of the thread."""
        return tool_name in self._tools

    def remember(self, tool_name: str) -> None:
        """Allow the tool for the rest of the thread."""
        self._tools[tool_name] = None
        self._tools.move_to_end(tool_name)
        while len(self._tools) > self.limit:
            self._tools.popitem(last=False)

    def forget(self, tool_name: str) -> None:
        """Ask a human again for this tool's next call."""
        self._tools.pop(tool_name, None)

    def __contains__(self, tool_name: object) -> bool:
        return tool_name in self._tools

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._tools))

    def __len__(self) -> int:
        return len(self._tools)


def decide(
    query: ApprovalQuery,
    policy: AgentApprovalPolicy | None,
    remembered: ThreadApprovals | None,
) -> ApprovalVerdict:
    """The verdict for one call: the agent's policy, else the tool's, then the thread's
    remembered approvals (see the module docstring for the order)."""
    verdict = _agent_verdict(policy, query) if policy is not None else None
    if verdict is None:
        verdict = query.tool.approval(query.arguments)
    if (
        verdict.outcome == "user-approval"
        and remembered is not None
        and remembered.allows(query.tool_name)
    ):
        return ApprovalVerdict("approved", REMEMBERED)
    return verdict


def _agent_verdict(policy: AgentApprovalPolicy, query: ApprovalQuery) -> ApprovalVerdict | None:
    """The agent policy's verdict, or None where it defers to the tool."""
    value = policy(query)
    if value is None or value is False:
        return None
    if value is True:
        return ApprovalVerdict("user-approval")
    if not isinstance(value, ApprovalVerdict):
        raise TypeError(
            f"an approval policy returns an ApprovalVerdict, a bool or None, not {value!r}"
        )
    return None if value.outcome == "not-applicable" else value
