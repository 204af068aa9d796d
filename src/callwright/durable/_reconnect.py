"""DBOS's connections to Postgres, opened again promptly once an outage ends.

DBOS retries an operation that lost its database (its ``db_retry``) after a backoff of
1 s doubling to 60 s, with jitter, asleep in between: after a 5-10 s outage a tool
worker writing a call's outcome, and the web side reading a call's stream, slept on
for up to 10 s more once Postgres answered. Neither ``DBOSConfig`` nor ``DBOSClient``
sets that backoff; both take the engine's way of connecting (``db_engine_kwargs``'s
``creator``, ``system_database_engine``). So every connection DBOS opens here comes
from ``reconnecting``: while Postgres refuses, it tries again every
``RETRY_SECONDS``, up to ``RECONNECT_SECONDS``, and DBOS's operation goes on the moment
Postgres answers. The pool checks a connection before lending it (``pool_pre_ping``),
so a connection the outage broke is opened again through it too; only a statement
that was running when the connection broke meets DBOS's own backoff, at the outage's
start, not its end.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg
    import sqlalchemy

log = logging.getLogger("callwright.durable")

RETRY_SECONDS = 0.1
"""How often a connection refused by Postgres is tried again."""
RECONNECT_SECONDS = 30.0
"""How long one connection is tried before its error goes to DBOS (which backs off,
then asks for a connection again)."""
CONNECT_TIMEOUT_SECONDS = 5
"""One attempt's bound on an unreachable host, unless the URL sets ``connect_timeout``."""
CLIENT_POOL_SIZE = 5
"""The web side's client pool (``DBOSClient``'s own default)."""


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://"))


def connect(
    url: str, application_name: str, seconds: float = RECONNECT_SECONDS
) -> psycopg.Connection[Any]:
    """A psycopg connection to ``url``, tried every ``RETRY_SECONDS`` while Postgres
    refuses it, for up to ``seconds``; then the last error."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    given = conninfo_to_dict(url.replace("postgresql+psycopg://", "postgresql://", 1))
    defaults: dict[str, str | int | None] = {
        "connect_timeout": CONNECT_TIMEOUT_SECONDS,
        "application_name": application_name,
    }
    conninfo = make_conninfo("", **{**defaults, **given})  # the URL's own settings win
    deadline = time.monotonic() + seconds
    refused_since: float | None = None
    while True:
        try:
            conn = psycopg.connect(conninfo)
        except psycopg.OperationalError:
            now = time.monotonic()
            if now >= deadline:
                raise
            if refused_since is None:
                refused_since = now
                log.info("Postgres refuses connections; trying again every %g s", RETRY_SECONDS)
            time.sleep(RETRY_SECONDS)
            continue
        if refused_since is not None:
            log.info("Postgres answers again after %.1f s", time.monotonic() - refused_since)
        return conn


def reconnecting(url: str, application_name: str) -> Any:
    """An engine ``creator`` (``db_engine_kwargs={"creator": ...}``) that opens each
    connection with ``connect``."""
    return functools.partial(connect, url, application_name)


def engine_kwargs(url: str, application_name: str) -> dict[str, Any]:
    """``DBOSConfig``'s ``db_engine_kwargs`` for a launched DBOS on ``url`` (none on
    SQLite, whose file does not go away)."""
    if not is_postgres(url):
        return {}
    return {"creator": reconnecting(url, application_name)}


def client_engine(url: str, application_name: str) -> sqlalchemy.Engine:
    """The engine of a ``DBOSClient`` on Postgres (``system_database_engine``): the
    client's own pool settings, with ``reconnecting`` connections. The caller disposes
    of it (the client does not dispose of an engine it was given)."""
    import sqlalchemy

    target = sqlalchemy.make_url(url).set(drivername="postgresql+psycopg")
    return sqlalchemy.create_engine(
        target,
        creator=reconnecting(url, application_name),
        pool_size=CLIENT_POOL_SIZE,
        max_overflow=0,
        pool_timeout=30,
        pool_pre_ping=True,
    )
