"""The callwright server under load (bench/load.py), in memory or journaled.

``python bench/_load_app.py --fd FD [--db FILE]``: serves ``create_app`` with uvicorn on
the listening socket ``FD`` it inherits from the harness (no port to race for), with a
``SQLiteJournal`` at ``FILE`` when given, or (``--database URL``) with the Postgres journal
and the DBOS runtime a replica of a multi-process deployment has (``--journal-only``:
the Postgres journal without DBOS, to measure the journal alone). Every run plays the
turns of ``_load_turns``.
"""

from __future__ import annotations

import argparse
import socket
from typing import Any

import uvicorn

from _load_turns import ARGUMENTS, RESULT, TEXT, TOOL
from callwright import Agent, tool
from callwright.messages import ToolResultMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app


@tool(name=TOOL)
async def lookup(city: str) -> str:
    """Look a city up. Returns at once: the load bench measures the runtime, not a tool."""
    return RESULT


def script(request: ModelRequest) -> list[Any]:
    """A call first; once its result is in, the answer."""
    if isinstance(request.messages[-1], ToolResultMessage):
        return [TEXT]
    return [call(TOOL, ARGUMENTS)]


def build(db: str | None, database: str | None = None, *, journal_only: bool = False) -> Any:
    agent = Agent(ScriptedModel(script, split_text=True, record=False), [lookup])
    if database is not None and journal_only:
        from callwright.store import open_journal

        return create_app(agent, journal=open_journal(database))
    if database is not None:
        from callwright.durable import DurableRuntime, new_executor_id
        from callwright.store import open_journal

        executor = new_executor_id()
        journal = open_journal(database, owner_id=executor, settle_gone=False)
        durable = DurableRuntime(agent, journal, database, executor)
        return create_app(agent, journal=journal, durable=durable)
    if db is None:
        return create_app(agent)
    from callwright.store import SQLiteJournal

    return create_app(agent, journal=SQLiteJournal(db))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--db")
    parser.add_argument("--database")
    parser.add_argument("--journal-only", action="store_true")
    args = parser.parse_args()
    sock = socket.socket(fileno=args.fd)
    app = build(args.db, args.database, journal_only=args.journal_only)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
