"""A callwright process for tests/mcp/test_task_resumption.py: it runs one journaled call
of a servers/tasking.py tool, prints ``running`` once the server's task reports
progress, and goes on until it is killed (as a server process dies mid-call).

    python task_agent.py JOURNAL URL TOOL ARGUMENTS_JSON [TIMEOUT]
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from callwright import Agent, start_journaled
from callwright.events import ToolProgress
from callwright.mcp import MCPServer
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.store import open_journal

THREAD = "t"


def scripted(tool: str, arguments: dict[str, Any]) -> ScriptedModel:
    """Calls ``tool`` (call id ``c1``); once its result is in, says ``Done:`` and it."""

    def turn(request: ModelRequest) -> list[Any]:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if results:
            last = results[-1]
            return [f"Done: {last.content}" + (" (error)" if last.is_error else "")]
        return [call(tool, arguments, id="c1")]

    return ScriptedModel(turn)


def agent(url: str, tool: str, arguments: dict[str, Any], timeout: float | None) -> Agent:
    server = MCPServer.http(url, name="tasking", timeout=timeout)
    return Agent(scripted(tool, arguments), toolsets=[server])


async def main(target: str, url: str, tool: str, arguments: str, timeout: float | None) -> None:
    journal = open_journal(target)
    made = agent(url, tool, json.loads(arguments), timeout)
    run, recorder = start_journaled(journal, made, THREAD, "r1", [UserMessage("go")], [])
    said = False
    async for event in run.events():
        recorder.record(event, b"frame")
        if isinstance(event, ToolProgress) and not said:
            print("running", flush=True)
            said = True


if __name__ == "__main__":
    limit = float(sys.argv[5]) if len(sys.argv) > 5 else None
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], limit))
