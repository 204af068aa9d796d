"""``--journal PATH_OR_URL``: which run journal ``serve`` and ``worker`` use, opened with
one-line errors, and shown without a password.

A SQLite file (``runs.db``, ``sqlite:///runs.db``) is one host's journal; a
``postgresql://`` URL is the journal the replicas share, with DBOS workflows beside it
(``callwright.durable``), so it is opened with its durable runtime.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from .run import Agent

SQLITE_PREFIX = "sqlite:///"


class JournalError(Exception):
    """``--journal`` names something that cannot serve as the run journal."""


@dataclass(frozen=True)
class JournalTarget:
    """What ``--journal`` names."""

    kind: Literal["sqlite", "postgres"]
    """A SQLite file on this host, or a Postgres database replicas share."""
    location: str
    """The SQLite file's path, or the Postgres URL (which may hold a password)."""

    @property
    def shown(self) -> str:
        """How the banner and errors name it: a path, or Postgres host/dbname (never the
        URL: it may hold a password)."""
        if self.kind == "sqlite":
            return f"SQLite {self.location}"
        return f"Postgres {postgres_place(self.location)}"

    @property
    def dbos_url(self) -> str:
        """The URL DBOS takes (``callwright worker``'s system database)."""
        if self.kind == "postgres":
            return self.location
        return SQLITE_PREFIX + os.path.abspath(self.location)


def journal_target(text: str) -> JournalTarget:
    """``runs.db``, ``sqlite:///runs.db`` (``sqlite:////abs/runs.db``) or ``postgresql://…``."""
    from .store.postgres import is_postgres_url

    if is_postgres_url(text):
        return JournalTarget("postgres", text)
    if text.startswith(SQLITE_PREFIX) and len(text) > len(SQLITE_PREFIX):
        return JournalTarget("sqlite", text[len(SQLITE_PREFIX) :])
    if "://" in text or not text.strip():
        scheme = text.partition("://")[0] or "an empty value"
        raise JournalError(
            f"--journal: not a journal ({scheme}): use a SQLite file path, "
            "sqlite:///path or postgresql://…"
        )
    return JournalTarget("sqlite", text)


def postgres_place(url: str) -> str:
    """``host:port/dbname`` of a Postgres URL (user and password left out)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or parse_qs(parts.query).get("host", ["localhost"])[0]
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable URL)"
    name = parts.path.lstrip("/") or "(default database)"
    return f"{host}{port}/{name}"


_CREDENTIALS = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]*):[^@\s]*@", re.IGNORECASE)
_PASSWORD_PARAM = re.compile(r"(\bpassword\s*=\s*)[^&\s]+", re.IGNORECASE)


def redacted(text: str) -> str:
    """``text`` with any URL's password replaced by ``***`` (error messages may quote one)."""
    return _PASSWORD_PARAM.sub(r"\1***", _CREDENTIALS.sub(r"\1:***@", text))


def open_sqlite(path: str, retention_days: float | None = None) -> Any:
    """The SQLite journal at ``path``, or a ``JournalError`` saying in one line why not."""
    import sqlite3

    from .store import SQLiteJournal

    try:
        return SQLiteJournal(path, retention_days=retention_days)
    except (sqlite3.Error, OSError) as exc:
        raise JournalError(f"--journal {path}: cannot use it as the run journal ({exc})") from None


@dataclass
class OpenJournal:
    """The journal ``serve`` opened, and what the banner says about it."""

    target: JournalTarget | None
    """None: no journal (runs live in memory)."""
    journal: Any = None
    """The opened ``SQLiteJournal`` or ``PostgresJournal``."""
    durable: Any = None
    """The DBOS runtime of a Postgres journal (``DurableRuntime``)."""
    executor_id: str | None = None
    """This process's DBOS executor id and journal owner id (Postgres only)."""
    worker_tools: list[str] = field(default_factory=list)
    """The tools that run on ``callwright worker`` processes (Postgres only)."""


def open_for_serve(
    text: str | None,
    agent: Agent,
    *,
    retention_days: float | None,
    executor_id: str | None,
    keep_workflows: float,
    worker_wait: float | None = 60.0,
) -> OpenJournal:
    """The journal ``--journal`` names; with Postgres, the durable runtime that shares its
    database (the executor id is the journal's owner id) and the agent's tools marked
    ``on_workers`` sent to tool workers."""
    if not text:
        return OpenJournal(None)
    target = journal_target(text)
    if target.kind == "sqlite":
        return OpenJournal(target, open_sqlite(target.location, retention_days))
    try:
        from .durable import DurableRuntime, new_executor_id, use_tool_workers
    except ImportError as exc:
        raise JournalError(
            f"a postgresql:// journal needs the durable extra ({exc}): "
            "pip install 'callwright[durable]'"
        ) from None
    from .store import open_journal

    executor = executor_id or new_executor_id()
    try:
        journal = open_journal(
            target.location, owner_id=executor, settle_gone=False, retention_days=retention_days
        )
    except Exception as exc:  # the URL may hold a password: never quoted whole
        why = redacted(str(exc).strip().split("\n")[0]) or type(exc).__name__
        raise JournalError(
            f"--journal {target.shown}: cannot open the run journal ({why})"
        ) from None
    before = {t.name: t for t in agent.toolbox}
    use_tool_workers(agent, target.location, worker_wait=worker_wait)
    moved = [t.name for t in agent.toolbox if before.get(t.name) is not t]
    runtime = DurableRuntime(
        agent, journal, target.location, executor, keep_workflows=keep_workflows
    )
    return OpenJournal(target, journal, runtime, executor, moved)
