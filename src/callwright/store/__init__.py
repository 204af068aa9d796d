"""Durable run journal: SQLite by default, one interface (see ``base.Journal``)."""

from .base import (
    Answer,
    Journal,
    PendingRecord,
    Rejected,
    Segment,
    Started,
    canonical_json,
    digest,
)
from .recorder import Recorder
from .session import start_journaled
from .signing import ApprovalSigner
from .sqlite import SQLiteJournal

__all__ = [
    "Answer",
    "ApprovalSigner",
    "Journal",
    "PendingRecord",
    "Recorder",
    "Rejected",
    "SQLiteJournal",
    "Segment",
    "Started",
    "canonical_json",
    "digest",
    "start_journaled",
]
