"""A journaled callwright server for the kill-and-restart test: ``python bench/_kill_app.py
--port P --db FILE --log FILE``. Its tools append what they do to ``--log``, so a test
can tell a tool that ran once from one that ran twice or never."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import uvicorn

from callwright import Agent, ToolContext, tool
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import SQLiteJournal


def build(db: str, log: str) -> Any:
    def record(line: str) -> None:
        with open(log, "a") as f:
            f.write(line + "\n")

    @tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file (asks first)."""
        record(f"delete {path}")
        return f"deleted {path}"

    @tool
    async def slow(name: str, ctx: ToolContext) -> str:
        """Runs for a long time."""
        record(f"slow start {name}")
        await asyncio.sleep(60)
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
            return [call("slow", {"name": words[1]}, id=f"call-{words[1]}")]
        return ["Hello."]

    agent = Agent(ScriptedModel(script, record=False), [delete_file, slow])
    return create_app(agent, journal=SQLiteJournal(db))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    uvicorn.run(build(args.db, args.log), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
