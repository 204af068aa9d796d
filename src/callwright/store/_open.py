"""Opening a journal by where it is: a Postgres URL or a SQLite file path."""

from __future__ import annotations

import sqlite3
from typing import Any

from ._journal import SQLJournal
from .postgres import PostgresJournal, is_postgres_url
from .sqlite import SQLiteJournal


def open_journal(target: str, **options: Any) -> SQLJournal:
    """``postgresql://…`` or ``postgres://…``: a ``PostgresJournal``; anything else is
    the path of a ``SQLiteJournal``. ``options`` are the journal's keyword parameters."""
    if is_postgres_url(target):
        return PostgresJournal(target, **options)
    return SQLiteJournal(target, **options)


def database_errors() -> tuple[type[BaseException], ...]:
    """What a journal's database raises when it cannot be used (a locked or read-only
    file, a Postgres server that is down): a server answers 503 for these."""
    try:
        import psycopg
    except ImportError:
        return (sqlite3.Error,)
    return (sqlite3.Error, psycopg.Error)
