"""Holding this process's lease, and what a lease that lapsed costs.

Each renewal (the heartbeat's, ``claim``'s, ``reopen``'s) first reads the lease as the
database holds it, under the row's lock. A lease that is still ours is extended. One
that lapsed meanwhile (a database outage or a stall longer than the lease: expired,
dropped by another process, taken over, or re-registered by another process under our
id) is an emergency, handled before the lease is taken again: another process may have
settled runs of ours or continued them, so each running segment of ours is read under
its row's lock, and those no longer running under our owner id are lost (``_lost``):
their next write here fails, naming what happened, and nothing more of them is written
here. While the lease may have run out (no renewal for a whole lease), no new segment
starts here (``lease_lapsed``).
"""

from __future__ import annotations

import logging
import time

from . import _owners
from ._sql import Db
from ._tx import Transactions
from .base import Segment

log = logging.getLogger("callwright.store")

TAKEN_OVER = "taken over by another process while this process's lease had lapsed; it stops here"
SETTLED = "settled by recovery while this process's lease had lapsed; it stops here"
LEASE_LAPSED = (
    "this server's lease on the run journal lapsed (the database was away); "
    "send the request again in a moment"
)


class LeaseHolder:
    """The lease part of ``SQLJournal`` (see the module docstring)."""

    lease_seconds: float
    _owner: str | None
    _live: set[int]
    _lost: dict[int, str]
    _renewed: float
    _txs: Transactions

    def _hold_lease(self, db: Db) -> None:
        """Renew this process's lease (inside the caller's transaction); if it had
        lapsed, stop the runs taken from it first."""
        assert self._owner is not None
        now = db.now()
        why = _owners.lapse(db, self._owner, now)
        if why is None:
            _owners.renew(db, self._owner, now, self.lease_seconds)
        else:
            lost = self._taken_from_us(db)
            _owners.register(db, self._owner, now, self.lease_seconds)
            log.warning(
                "this process's journal lease had lapsed (%s); %d of its %d running runs "
                "were settled or taken over by another process and stop here; lease taken again",
                why,
                len(lost),
                len(self._live),
            )
        self._mark_renewed()

    def _mark_renewed(self) -> None:
        before, self._renewed = self._renewed, time.monotonic()
        self._txs.changed(lambda: setattr(self, "_renewed", before))

    def _taken_from_us(self, db: Db) -> list[int]:
        """Our live segments no longer running under our owner id (locked, so that none
        is taken between this check and the lease renewed)."""
        lost: list[int] = []
        for seg_id in sorted(self._live):
            row = db.execute(
                "SELECT status, owner FROM segments WHERE id = ?" + db.for_update, (seg_id,)
            ).fetchone()
            if row is None or row[0] != "running" or row[1] != self._owner:
                lost.append(seg_id)
                self._lose(seg_id, TAKEN_OVER if row and row[0] == "running" else SETTLED)
        return lost

    def _lose(self, seg_id: int, how: str) -> None:
        """``_lost[seg_id] = how``, taken back if the transaction rolls back."""
        self._lost[seg_id] = how

        def restore() -> None:
            del self._lost[seg_id]

        self._txs.changed(restore)

    def _lease_lapsed(self) -> bool:
        """Whether this serving process's lease may have run out (no renewal for a whole
        lease): it starts no new segment until a renewal has held it again."""
        return self._owner is not None and time.monotonic() - self._renewed > self.lease_seconds

    def _refuse_lost(self, segment: Segment) -> None:
        """A lost segment's writes fail here, naming what happened to its run."""
        how = self._lost.get(segment.id)
        if how is not None:
            raise RuntimeError(f"run {segment.run_id} was {how}")
