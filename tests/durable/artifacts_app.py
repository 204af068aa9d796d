"""Replicas and tool workers of an agent with artifacts, for tests/durable/
test_artifacts_replicas.py. ``python artifacts_app.py DATABASE EXECUTOR_ID PORT`` serves
it with users (Bearer ``alice-token`` is ``alice``, ``bob-token`` ``bob``) and its
``on_workers`` tool on ``callwright worker --agent artifacts_app.py:make_agent``.

The scripted model reads the last user message: ``big remote <tag>`` calls ``big_remote``
(on a worker), ``big here <tag>`` the idempotent ``big_here`` (in the replica, after 3
s); both return 10,000 lines ``<tag> line NNNNNN`` (about 200 KB, over the artifacts'
threshold). Once the result's preview is in, the model reads lines 5,001 and 5,002
with ``read_artifact`` and answers ``Done: <what it read>``. The tools note ``start
<tag> pid=<pid>`` in ``$SIDE_EFFECTS``.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from typing import Any

import uvicorn

from callwright import Agent, tool
from callwright.artifacts import Artifacts
from callwright.durable import DurableRuntime, use_tool_workers
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import open_journal

TOKENS = {"Bearer alice-token": "alice", "Bearer bob-token": "bob"}
LINES = 10_000
ARTIFACT_ID = re.compile(r"art_[0-9a-f]{32}")


def big_text(tag: str) -> str:
    return "".join(f"{tag} line {i:06d}\n" for i in range(LINES))


def _note(line: str) -> None:
    path = os.environ.get("SIDE_EFFECTS")
    if path:
        with open(path, "a") as file:
            file.write(f"{line} pid={os.getpid()}\n")


@tool(on_workers=True)
def big_remote(tag: str) -> str:
    """A large result, made on a tool worker."""
    _note(f"start {tag}")
    return big_text(tag)


@tool(idempotent=True)
async def big_here(tag: str) -> str:
    """A large result, made in the replica after a while (safe to repeat)."""
    _note(f"start {tag}")
    await asyncio.sleep(3)
    return big_text(tag)


def script(request: ModelRequest) -> list[Any]:
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    user = messages[last_user]
    assert isinstance(user, UserMessage)
    results = [m for m in messages[last_user + 1 :] if isinstance(m, ToolResultMessage)]
    words = user.content.split()
    if not results and len(words) == 3 and words[0] == "big":
        name = {"remote": "big_remote", "here": "big_here"}[words[1]]
        return [call(name, {"tag": words[2]}, id=f"call_{words[2]}")]
    if len(results) == 1:
        found = ARTIFACT_ID.search(results[0].content)
        if found is None:
            return ["No artifact."]
        arguments = {"artifact_id": found.group(0), "start_line": 5001, "line_count": 2}
        return [call("read_artifact", arguments, id=f"call_read_{words[-1]}")]
    return [f"Done: {results[-1].content}"]


def make_agent() -> Agent:
    return Agent(
        ScriptedModel(script, record=False),
        [big_remote, big_here],
        name="artifacts-test",
        artifacts=Artifacts(),
    )


def authenticate(request: Any) -> str | None:
    return TOKENS.get(request.headers.get("authorization", ""))


def main(database: str, executor_id: str, port: int) -> None:
    agent = make_agent()
    use_tool_workers(agent, database)
    journal = open_journal(database, owner_id=executor_id, settle_gone=False)
    durable = DurableRuntime(agent, journal, database, executor_id)
    app = create_app(agent, journal=journal, durable=durable, authenticate=authenticate)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
