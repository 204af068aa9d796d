"""Fixtures every test directory may use: a real Postgres server, the journal's two
backends to parametrize over (see tests/_postgres.py), and a journal on each."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from _postgres import (
    BACKENDS,
    PostgresServer,
    PostgresUrl,
    drop_journal_target,
    journal_target_for,
)
from callwright.store import SQLJournal, open_journal


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[PostgresUrl]:
    """``postgresql://postgres@127.0.0.1:PORT/callwright`` on a server started for the
    session; it also has ``stop()``, ``start()``, ``restart()`` and ``fresh_database()``."""
    server = PostgresServer()
    try:
        yield PostgresUrl(server)
    finally:
        server.close()


@pytest.fixture(params=BACKENDS)
def journal_target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A journal's target on each backend in turn (a test using it runs on both); a
    Postgres database is dropped after the test."""
    target = journal_target_for(request.param, request, tmp_path)
    yield target
    drop_journal_target(target, request)


@pytest.fixture
def journal(journal_target: str) -> Iterator[SQLJournal]:
    """A journal on each backend in turn, closed after the test."""
    j = open_journal(journal_target)
    yield j
    j.close()
