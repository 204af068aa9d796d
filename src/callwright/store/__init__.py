"""Durable run journal: SQLite by default, one interface (see ``base.Journal``)."""

from .base import (
    Answer,
    Journal,
    JournalLimits,
    JournalUnavailable,
    PendingRecord,
    Rejected,
    Segment,
    Started,
    canonical_json,
    digest,
)
from .recorder import Recorder
from .session import begin_journaled, start_journaled
from .signing import ApprovalSigner
from .sqlite import SQLiteJournal

__all__ = [
    "Answer",
    "ApprovalSigner",
    "Journal",
    "JournalLimits",
    "JournalUnavailable",
    "PendingRecord",
    "Recorder",
    "Rejected",
    "SQLiteJournal",
    "Segment",
    "Started",
    "begin_journaled",
    "canonical_json",
    "digest",
    "start_journaled",
]
