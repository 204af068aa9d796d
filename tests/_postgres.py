"""A throw-away Postgres server for the tests: Debian's binaries, a cluster in a temp dir.

``make test`` installs Debian's ``postgresql`` package when no server binary is there
(the Makefile's ``postgres`` target); nothing else is needed. The cluster listens on
127.0.0.1 on a free port (and a Unix socket in its own directory), trusts local
connections, and trades durability for speed as only a test may: ``fsync``,
``synchronous_commit`` and ``full_page_writes`` are off (a crash of the machine loses
the cluster, which the tests throw away anyway). A restart of the server (``restart``)
keeps its data: a test can check that journals reconnect. Postgres refuses to run as
root, so as root the cluster belongs to the ``postgres`` OS user and its commands run
through ``runuser``.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

BACKENDS = ["sqlite", "postgres"]
"""The journal's backends a journal test runs on (the ``journal_target`` fixture)."""

SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "300",
    "shared_buffers": "64MB",
    "log_min_messages": "warning",
}
"""Test-only settings: nothing here is for a deployment (see DEPLOY.md for those)."""


def bin_dir() -> Path:
    """The newest installed server's binaries (``/usr/lib/postgresql/N/bin``)."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/postgres"),
        key=lambda p: int(Path(p).parent.parent.name),
    )
    if not found:
        raise RuntimeError("no Postgres server installed: run `make postgres` (Debian's package)")
    return Path(found[-1]).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One cluster: ``start``, ``stop``, ``restart`` (same port and data), ``close``
    (stop and delete). ``url`` is its ``callwright`` database; ``fresh_database`` makes
    another, empty one."""

    def __init__(self) -> None:
        self.bin = bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="callwright-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self._as_postgres = os.getuid() == 0
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(
            "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
            "-E", "UTF8", "--no-locale", "--no-sync",
        )  # fmt: skip
        self.start()
        self.create_database("callwright")

    @property
    def url(self) -> str:
        return self.database_url("callwright")

    def database_url(self, name: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin / program), *args]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, cwd=self.root, timeout=120)

    def start(self) -> None:
        options = " ".join(f"-c {k}={v}" for k, v in SETTINGS.items())
        options += f" -p {self.port} -c unix_socket_directories={self.root}"
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"),
            "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip

    def stop(self) -> None:
        """A fast shutdown: open connections are ended (clients see them lost)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.database_url("postgres"), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.database_url(name)

    def fresh_database(self) -> str:
        """A new empty database's URL: a test's rows are not another's."""
        return self.create_database(f"t_{uuid.uuid4().hex[:16]}")

    def drop_database(self, url: str) -> None:
        """Drop a database made by ``fresh_database`` (ending connections left open)."""
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.database_url("postgres"), autocommit=True) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class PostgresUrl(str):
    """The ``callwright`` database's URL, which can also stop, start and restart its
    server and make fresh databases (the ``postgres_url`` fixture)."""

    server: PostgresServer

    def __new__(cls, server: PostgresServer) -> PostgresUrl:
        url = super().__new__(cls, server.url)
        url.server = server
        return url

    def start(self) -> None:
        self.server.start()

    def stop(self) -> None:
        self.server.stop()

    def restart(self) -> None:
        self.server.restart()

    def fresh_database(self) -> str:
        return self.server.fresh_database()

    def drop_database(self, url: str) -> None:
        self.server.drop_database(url)


def journal_target_for(backend: str, request: Any, directory: Path) -> str:
    """Where a journal of ``backend`` is opened (``open_journal``): a new file in
    ``directory``, or a fresh database on the session's server (``request`` is the
    pytest fixture request that asks for ``postgres_url``)."""
    if backend == "sqlite":
        return str(directory / "journal.db")
    url: PostgresUrl = request.getfixturevalue("postgres_url")
    return url.fresh_database()


def drop_journal_target(target: str, request: Any) -> None:
    """Drop a Postgres target of ``journal_target_for`` (a file goes with its temp dir)."""
    if target.startswith("postgresql://"):
        url: PostgresUrl = request.getfixturevalue("postgres_url")
        url.drop_database(target)
