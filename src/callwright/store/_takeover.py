"""Taking a gone owner's running segments over instead of settling them.

A durable-execution layer (one executor per process, its id the journal's owner id)
finds the segments whose owner is gone (``orphans``, each with the ``spec`` its
``begin`` stored), lets exactly one live process take each owner (``claim``), and
continues their segments there (``reopen``): the segment's history is rebuilt as
recovery would (``_recovery.rebuild``), but the run and the segment stay ``running``
under the new owner, and its event log goes on from the last offset written. Each
step is one transaction under row locks, so two processes racing for the same owner
or segment cannot both win. A segment ``reopen`` declines (its owner turned out live)
stays its owner's, and is listed again if that owner goes later.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from ..call import Decision
from ..elicitation import InputAnswer
from . import _owners
from ._recovery import rebuild, settle_run
from ._rows import kept_decisions, kept_handles, thread_approvals
from ._run_settings import read_settings
from ._sql import Db, thread_key
from .base import JournalLimits, Orphan, Segment, Started

T = TypeVar("T")


class TakeOver:
    """``gone_owners``, ``orphans``, ``claim`` and ``reopen`` of ``SQLJournal``."""

    limits: JournalLimits
    lease_seconds: float
    _owner: str | None
    _owner_id: str | None
    _live: set[int]
    _idempotent: set[str]
    _tx: Callable[[], AbstractContextManager[Db]]

    def _become_owner(self) -> str:
        raise NotImplementedError

    def _reads(self, fn: Callable[[Db], T]) -> T:
        raise NotImplementedError

    def _add(self, items: set[int], item: int) -> None:
        raise NotImplementedError

    def _hold_lease(self, db: Db) -> None:
        raise NotImplementedError

    def gone_owners(self) -> list[str]:
        """Owners that are gone (lease expired, process gone, or closed) and still own
        running segments, not already taken by a live owner (this one included)."""
        mine = self._owner or self._owner_id

        def read(db: Db) -> list[str]:
            now = db.now()
            rows = db.execute(
                "SELECT DISTINCT s.owner, o.taken_by FROM segments s "
                "LEFT JOIN owners o ON o.id = s.owner "
                "WHERE s.status = 'running' AND s.owner IS NOT NULL"
            ).fetchall()
            return sorted(
                owner
                for owner, taken in rows
                if owner != mine
                and not _owners.alive(db, owner, now)
                and (taken is None or (taken != mine and not _owners.alive(db, taken, now)))
            )

        return self._reads(read)

    def orphans(self, *, own: bool = False) -> list[Orphan]:
        """See ``Journal.orphans``: the gone owners first (one row per owner, as
        ``gone_owners``), then their segments."""
        mine = self._owner or self._owner_id
        live = set(self._live)

        def read(db: Db) -> list[Orphan]:
            now = db.now()
            owners = db.execute(
                "SELECT DISTINCT s.owner, o.taken_by FROM segments s "
                "LEFT JOIN owners o ON o.id = s.owner "
                "WHERE s.status = 'running' AND s.owner IS NOT NULL"
            ).fetchall()
            gone = sorted(
                owner
                for owner, taken in owners
                if (owner == mine and own)
                or (
                    owner != mine
                    and not _owners.alive(db, owner, now)
                    and (taken is None or taken == mine or not _owners.alive(db, taken, now))
                )
            )
            found: list[Orphan] = []
            for owner in gone:
                rows = db.execute(
                    "SELECT id, request_id, principal, spec FROM segments "
                    "WHERE owner = ? AND status = 'running' ORDER BY id",
                    (owner,),
                ).fetchall()
                found += [
                    Orphan(owner, request_id, principal, spec or "")
                    for seg_id, request_id, principal, spec in rows
                    if owner != mine or seg_id not in live
                ]
            return found

        return self._reads(read)

    def claim(self, gone_owner: str) -> bool:
        """Mark ``gone_owner`` as taken over by this journal's owner. True for the one
        caller that wins (and again for it if it asks again); False if the owner is
        live, or was taken by another owner that is live."""
        owner = self._become_owner()
        if gone_owner == owner:
            return False
        with self._tx() as db:
            self._hold_lease(db)
            now = db.now()
            db.execute(  # an owner whose row is gone (closed) gets one to hold the claim
                "INSERT INTO owners (id, host, pid, started_at, expires_at) "
                "VALUES (?, '', 0, 0, 0) ON CONFLICT (id) DO NOTHING",
                (gone_owner,),
            )
            row = db.execute(
                "SELECT taken_by FROM owners WHERE id = ?" + db.for_update, (gone_owner,)
            ).fetchone()
            if _owners.alive(db, gone_owner, now):
                return False
            taken = row[0]
            if taken == owner:
                return True
            if taken is not None and _owners.alive(db, taken, now):
                return False
            db.execute("UPDATE owners SET taken_by = ? WHERE id = ?", (owner, gone_owner))
            return True

    def reopen(
        self, request_id: str, idempotent: set[str], *, principal: str | None = None
    ) -> Started | None:
        """Continue the running segment of ``request_id`` here (see the module docstring).

        Completed operations get their journaled results, a started call of a tool
        not in ``idempotent`` an in-doubt result; calls that never started and
        idempotent ones stay open, for the run to execute (with the decision a human
        gave, where the call was approved: ``Started.decisions``). Returns None when the
        segment is not running, or its owner is live (another process, or this one
        running it now): the segment stays as it is, and ``orphans`` lists it again
        once its owner is gone. The caller is the process that won ``claim``; the row
        lock here admits one reopen of a segment even without it. ``principal``: the
        request's principal where request ids may repeat across principals.
        """
        owner = self._become_owner()
        self._idempotent |= idempotent
        with self._tx() as db:
            self._hold_lease(db)
            now = db.now()
            found = _running_segment(db, request_id, principal)
            if found is None:
                return None
            seg_id, run_id, seq, thread_id, seg_principal = found
            db.lock_thread(thread_key(seg_principal, thread_id), wait=True)
            row = db.execute(
                "SELECT status, owner FROM segments WHERE id = ?" + db.for_update, (seg_id,)
            ).fetchone()
            if row[0] != "running" or not self._may_take(db, row[1], seg_id, now):
                return None
            db.execute("UPDATE segments SET owner = ? WHERE id = ?", (owner, seg_id))
            history = rebuild(db, run_id, thread_id, seg_principal, self._idempotent, self.limits)
            state, next_op, offset = _resume_point(db, run_id, thread_id, seg_principal, seg_id)
            decisions: dict[str, Decision | InputAnswer] = {}
            decisions.update(kept_decisions(db, thread_id, seg_principal, history))
            remembered = thread_approvals(db, thread_id, seg_principal)
            settings = read_settings(db, run_id)
            handles = kept_handles(db, run_id, history)
            self._add(self._live, seg_id)
        segment = Segment(thread_id, run_id, seq, request_id, seg_id, seg_principal)
        return Started(
            segment, history, decisions, state, next_op, offset, remembered, settings,
            handles=handles,
        )  # fmt: skip

    def settle_orphan(self, request_id: str, principal: str | None = None) -> bool:
        """Settle the running segment of ``request_id`` as recovery would (its run
        interrupted, the next request on its thread resumes it) when it cannot be
        continued (it has no spec: begun by an older version, or without a durable
        layer). False when it is not running or its owner is live."""
        self._become_owner()
        with self._tx() as db:
            self._hold_lease(db)
            now = db.now()
            found = _running_segment(db, request_id, principal)
            if found is None:
                return False
            seg_id, run_id, _, thread_id, seg_principal = found
            db.lock_thread(thread_key(seg_principal, thread_id), wait=True)
            row = db.execute(
                "SELECT status, owner FROM segments WHERE id = ?" + db.for_update, (seg_id,)
            ).fetchone()
            if row[0] != "running" or not self._may_take(db, row[1], seg_id, now):
                return False
            settle_run(db, run_id, thread_id, seg_principal, self._idempotent, self.limits, now)
        return True

    def _may_take(self, db: Db, seg_owner: str | None, seg_id: int, now: float) -> bool:
        if seg_owner is not None and seg_owner == self._owner:
            return seg_id not in self._live  # a former process under the same owner id
        if seg_owner is None:
            return True
        # The claim picks who continues; the row lock admits one reopen whatever the claims.
        return not _owners.alive(db, seg_owner, now)


def _running_segment(
    db: Db, request_id: str, principal: str | None
) -> tuple[int, str, int, str, str] | None:
    sql = (
        "SELECT id, run_id, seq, thread_id, principal FROM segments "
        "WHERE request_id = ? AND status = 'running'"
    )
    args: tuple[Any, ...] = (request_id,)
    if principal is not None:
        sql, args = sql + " AND principal = ?", (request_id, principal)
    row = db.execute(sql + " ORDER BY id DESC LIMIT 1", args).fetchone()
    return None if row is None else (int(row[0]), row[1], int(row[2]), row[3], row[4])


def _resume_point(
    db: Db, run_id: str, thread_id: str, principal: str, segment: int
) -> tuple[dict[str, Any] | None, int, int]:
    """The thread's state, the run's next operation and the segment's last event offset."""
    state = db.execute(
        "SELECT state FROM threads WHERE principal = ? AND id = ?", (principal, thread_id)
    ).fetchone()
    next_op = db.execute(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM operations WHERE run_id = ?", (run_id,)
    ).fetchone()[0]
    offset = db.execute(
        'SELECT COALESCE(MAX("last"), 0) FROM events WHERE segment = ?', (segment,)
    ).fetchone()[0]
    loaded = None if state is None or state[0] is None else json.loads(state[0])
    return loaded, int(next_op), int(offset)
