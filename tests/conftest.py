"""Fixtures every test directory may use: a real Postgres server, and the journal's two
backends to parametrize over (see tests/_postgres.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from _postgres import PostgresServer, PostgresUrl

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[PostgresUrl]:
    """``postgresql://postgres@127.0.0.1:PORT/callwright`` on a server started for the
    session; it also has ``stop()``, ``start()``, ``restart()`` and ``fresh_database()``."""
    server = PostgresServer()
    try:
        yield PostgresUrl(server)
    finally:
        server.close()


def journal_target_for(backend: str, request: pytest.FixtureRequest, directory: Path) -> str:
    """Where a journal of ``backend`` is opened (``open_journal``): a new file in
    ``directory``, or a fresh Postgres database."""
    if backend == "sqlite":
        return str(directory / "journal.db")
    url: PostgresUrl = request.getfixturevalue("postgres_url")
    return url.fresh_database()


@pytest.fixture(params=BACKENDS)
def journal_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A journal's target on each backend in turn (a test using it runs on both)."""
    return journal_target_for(request.param, request, tmp_path)
