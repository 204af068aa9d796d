"""Where the server remembers, in memory, the approvals it asked for until they are answered."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Protocol

from ._records import IssuedApproval


class ApprovalLedger(Protocol):
    """Where the server remembers the approvals it asked for until they are answered."""

    def issue(self, approval_id: str, approval: IssuedApproval) -> None: ...

    def redeem(self, approval_id: str) -> IssuedApproval | None:
        """The approval, forgotten as it is returned (so it is honoured once)."""
        ...

    def open_id(self, approval: IssuedApproval) -> str | None:
        """The id of the open approval for the same call (principal, thread, tool and
        arguments), if one is open: a call asked again keeps its interrupt's id."""
        ...


class MemoryApprovalLedger:
    """In-process ledger, bounded twice: each owner (see ``IssuedApproval.owner``) keeps at
    most ``per_owner`` open approvals, dropping its own oldest beyond that, and the whole
    ledger at most ``limit``, dropping the oldest of all. One request that asks for ten
    thousand approvals thus forgets only its own, never another user's."""

    def __init__(self, limit: int = 10_000, per_owner: int = 1_000) -> None:
        if not 0 < per_owner <= limit:
            raise ValueError("need 0 < per_owner <= limit")
        self._open: OrderedDict[str, IssuedApproval] = OrderedDict()
        self._owned: dict[tuple[str, str | None], OrderedDict[str, None]] = {}
        self._limit = limit
        self._per_owner = per_owner

    def issue(self, approval_id: str, approval: IssuedApproval) -> None:
        self.redeem(approval_id)
        self._open[approval_id] = approval
        mine = self._owned.setdefault(approval.owner, OrderedDict())
        mine[approval_id] = None
        while len(mine) > self._per_owner:
            self.redeem(next(iter(mine)))
        while len(self._open) > self._limit:
            self.redeem(next(iter(self._open)))

    def redeem(self, approval_id: str) -> IssuedApproval | None:
        approval = self._open.pop(approval_id, None)
        if approval is not None:
            mine = self._owned[approval.owner]
            del mine[approval_id]
            if not mine:
                del self._owned[approval.owner]
        return approval

    def open_id(self, approval: IssuedApproval) -> str | None:
        """Looks among the owner's open approvals only (at most ``per_owner``)."""
        for approval_id in self._owned.get(approval.owner, ()):
            if _same(self._open[approval_id], approval):
                return approval_id
        return None

    def __len__(self) -> int:
        return len(self._open)


def _same(open_: IssuedApproval, asked: IssuedApproval) -> bool:
    fields: tuple[Any, ...] = (asked.call_id, asked.tool_name, asked.principal, asked.thread_id)
    ours = (open_.call_id, open_.tool_name, open_.principal, open_.thread_id)
    return open_.request is None and ours == fields and open_.arguments == asked.arguments
