"""A journaled callwright server for the kill-and-restart test: ``python bench/_kill_app.py
--port P --db FILE --log FILE``. Its tools append what they do to ``--log``, so a test
can tell a tool that ran once from one that ran twice or never (and the same lines with
the process id to ``--log`` + ``.pid``: which worker ran it).

``make_agent`` is the same agent for ``callwright serve --agent
bench/_kill_app.py:make_agent`` (the log file then comes from ``CALLWRIGHT_KILL_LOG``):
that is how the test serves it with ``--workers 2``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

import uvicorn

from callwright import Agent, ToolContext, tool
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import SQLiteJournal

LOG_ENV = "CALLWRIGHT_KILL_LOG"


def make_agent(log: str | None = None) -> Agent:
    """The agent: ``delete <path>`` asks for approval; ``slow <name> [seconds]`` runs for
    a while (60 s by default); anything else says hello."""
    path = log or os.environ[LOG_ENV]

    def record(line: str) -> None:
        with open(path, "a") as f:
            f.write(line + "\n")
        with open(path + ".pid", "a") as f:
            f.write(f"{line} {os.getpid()}\n")

    @tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file (asks first)."""
        record(f"delete {path}")
        return f"deleted {path}"

    @tool
    async def slow(name: str, seconds: float, ctx: ToolContext) -> str:
        """Runs for a long time."""
        record(f"slow start {name}")
        await asyncio.sleep(seconds)
        record(f"slow end {name}")
        return "finished"

    def script(request: ModelRequest) -> list[Any]:
        messages = request.messages
        last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
        words = messages[last_user].content.split()  # type: ignore[union-attr]
        results = [m for m in messages[last_user + 1 :] if isinstance(m, ToolResultMessage)]
        if results:
            return ["Done: " + "; ".join(r.content for r in results)]
        if words[0] == "delete":
            return [call("delete_file", {"path": words[1]}, id=f"call-{words[1]}")]
        if words[0] == "slow":
            seconds = float(words[2]) if len(words) > 2 else 60.0
            return [call("slow", {"name": words[1], "seconds": seconds}, id=f"call-{words[1]}")]
        return ["Hello."]

    return Agent(ScriptedModel(script, record=False), [delete_file, slow])


def build(db: str, log: str) -> Any:
    # a short heartbeat: a killed sibling's runs are settled within a second
    journal = SQLiteJournal(db, heartbeat_seconds=0.5)
    return create_app(make_agent(log), journal=journal)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    uvicorn.run(build(args.db, args.log), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
