"""A replica built in Python, as an application with users builds one: ``create_app`` with
``authenticate``, ``deps_factory`` and a ``DurableRuntime`` (tests/durable/agent.py's
agent). Run as ``python app_with_users.py DATABASE EXECUTOR_ID PORT``.

Bearer ``alice-token`` is the principal ``alice``, ``bob-token`` ``bob``. The deps say
whose they are and whether a request made them (``by: request``) or a replica that
continues the run without one (``by: continuation``, ``deps_factory(None, principal)``).
"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn
from agent import make_agent  # the script's own directory is on the path

from callwright.durable import DurableRuntime
from callwright.server import create_app
from callwright.store import open_journal

TOKENS = {"Bearer alice-token": "alice", "Bearer bob-token": "bob"}


def authenticate(request: Any) -> str | None:
    return TOKENS.get(request.headers.get("authorization", ""))


def deps_factory(request: Any, principal: str | None) -> dict[str, str]:
    return {"tenant": f"tenant-of-{principal}", "by": "request" if request else "continuation"}


def main(database: str, executor_id: str, port: int) -> None:
    agent = make_agent()
    journal = open_journal(database, owner_id=executor_id, settle_gone=False)
    durable = DurableRuntime(agent, journal, database, executor_id)
    app = create_app(
        agent,
        journal=journal,
        durable=durable,
        authenticate=authenticate,
        deps_factory=deps_factory,
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
