"""Durable run journal: SQLite by default, Postgres for many processes, one interface.

``base.Journal`` is the interface. ``SQLiteJournal`` keeps it in one file (the
embedded default: one machine, one or several processes); ``PostgresJournal`` in one
Postgres database that N web replicas and M tool workers share (psycopg 3, the
``durable`` extra). Both are ``SQLJournal``: the same statements and semantics, the
database's differences in ``_sql``/``_pg``. ``open_journal(target)`` picks one by
its target: a ``postgresql://`` or ``postgres://`` URL, else a file path.

For a durable-execution layer continuing the runs of dead processes, both take
``owner_id`` (the executor id) and ``settle_gone=False``, and offer
``orphans`` (with each segment's ``spec``), ``claim`` and ``reopen``.

The store sits below the run: it gives a segment's ``RunStart`` (``run_start``) and its
``Recorder``, and ``callwright.start_journaled`` / ``begin_journaled`` start the run.
"""

from ._journal import SQLJournal
from ._open import database_errors, open_journal
from .base import (
    Answer,
    Journal,
    JournalLimits,
    JournalUnavailable,
    Orphan,
    PendingRecord,
    Rejected,
    Segment,
    Started,
    canonical_json,
    digest,
)
from .postgres import PostgresJournal
from .recorder import Recorder
from .session import recorder_for, run_start
from .signing import ApprovalSigner
from .sqlite import SQLiteJournal

__all__ = [
    "Answer",
    "ApprovalSigner",
    "Journal",
    "JournalLimits",
    "JournalUnavailable",
    "Orphan",
    "PendingRecord",
    "PostgresJournal",
    "Recorder",
    "Rejected",
    "SQLJournal",
    "SQLiteJournal",
    "Segment",
    "Started",
    "canonical_json",
    "database_errors",
    "digest",
    "open_journal",
    "recorder_for",
    "run_start",
]
