"""MCP tool annotations as callwright tool flags, against real servers' own annotations.

``readOnlyHint`` never asks for approval, ``destructiveHint`` does (and its spec default,
true, applies to a tool that says ``readOnlyHint: false`` and nothing more); a tool with
no hints asks nothing. ``idempotentHint`` (or ``readOnlyHint``) makes the tool
``idempotent``: a call the server was running when it stopped is run again on resume
from the journal, where any other is settled as interrupted. Served the other way, an
idempotent callwright tool is announced with ``idempotentHint``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from callwright import Agent, start_journaled
from callwright import events as ev
from callwright.mcp._convert import idempotent, needs_approval
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ScriptedModel, call
from callwright.store import SQLiteJournal


def hinted(**hints: Any) -> types.Tool:
    annotations = types.ToolAnnotations(**hints) if hints else None
    return types.Tool(name="t", input_schema={"type": "object"}, annotations=annotations)


@pytest.mark.parametrize(
    ("hints", "asks", "repeatable"),
    [
        ({}, False, False),
        ({"title": "Only a title"}, False, False),
        ({"read_only_hint": True}, False, True),
        ({"read_only_hint": True, "destructive_hint": True}, False, True),
        ({"destructive_hint": True}, True, False),
        ({"read_only_hint": False}, True, False),
        ({"read_only_hint": False, "destructive_hint": False}, False, False),
        (
            {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": True},
            False,
            True,
        ),
        ({"destructive_hint": True, "idempotent_hint": True}, True, True),
    ],
)
def test_hints_to_approval_and_idempotence(
    hints: dict[str, Any], asks: bool, repeatable: bool
) -> None:
    tool = hinted(**hints)
    assert needs_approval(tool, None) is asks
    assert idempotent(tool) is repeatable
    assert needs_approval(tool, False) is False and needs_approval(tool, True) is True


async def test_server_everythings_annotations_become_flags(everything_stdio: Any) -> None:
    async with Agent(ScriptedModel([["ok"]]), toolsets=[everything_stdio()]) as agent:
        await agent.toolbox.ready()
        box = agent.toolbox
        flags = {
            name: (box.get(name).idempotent, bool(box.get(name).requires_approval))  # type: ignore[union-attr]
            for name in (
                "echo",
                "trigger-long-running-operation",
                "gzip-file-as-resource",
                "toggle-simulated-logging",
                "trigger-elicitation-request",
            )
        }
    assert flags == {
        "echo": (True, False),  # readOnly, idempotent
        "trigger-long-running-operation": (True, False),  # readOnly, idempotent
        "gzip-file-as-resource": (True, False),  # writes, idempotent, not destructive
        "toggle-simulated-logging": (False, False),  # writes, not idempotent
        "trigger-elicitation-request": (False, False),
    }


async def test_a_writer_without_a_destructive_hint_asks(changing_stdio: Any) -> None:
    model = ScriptedModel([[call("append", {"line": "x"})], ["ok"]])
    async with Agent(model, toolsets=[changing_stdio()]) as agent:
        result = await agent.run("append")
    assert result.status == "paused" and result.pending[0].kind == "approval"


@pytest.mark.parametrize("listed_before", [True, False])
async def test_an_interrupted_idempotent_mcp_call_runs_again_on_resume(
    tmp_path: Path, everything_stdio: Any, listed_before: bool
) -> None:
    """The server stops while two MCP calls run: the idempotent one (``get-sum``,
    ``idempotentHint``) runs again when the thread resumes, the other
    (``toggle-simulated-logging``) is settled as interrupted. Recovery is given no tool
    names, as at a server's start-up before any MCP server is listed: the flag travels
    in the journal's operation rows, read per call (``listed_before=False``: the run
    lists the MCP server's tools itself, after its recorder was made, as in a process's
    first run)."""
    turn = [
        call("get-sum", {"a": 2, "b": 3}, id="sum"),
        call("toggle-simulated-logging", {}, id="log"),
    ]
    model = ScriptedModel([turn, ["after recovery"]])
    journal = SQLiteJournal(str(tmp_path / "journal.db"))
    async with Agent(model, toolsets=[everything_stdio()], strategy="sequential") as agent:
        if listed_before:
            await agent.toolbox.ready()
        run, rec = start_journaled(journal, agent, "t", "r1", [UserMessage("go")], [])
        async for event in run.events():
            rec.record(event)
            if isinstance(event, ev.ModelResponse):
                for call_id, name in (("sum", "get-sum"), ("log", "toggle-simulated-logging")):
                    rec.record(ev.ToolExecutionStart(call_id, name))
                break  # the process stops dead with both calls started
        fresh = SQLiteJournal(journal.path)  # a new process
        try:
            assert fresh.recover(set()) == [rec.segment.run_id]
            run2, rec2 = start_journaled(fresh, agent, "t", "r2", [], [])
            rerun: list[ev.ToolExecutionStart] = []
            async for event in run2.events():
                rec2.record(event)
                if isinstance(event, ev.ToolExecutionStart):
                    rerun.append(event)
            results = {m.call_id: m for m in fresh.history("t") if isinstance(m, ToolResultMessage)}
        finally:
            fresh.close()
            journal.close()
    assert [e.tool_name for e in rerun] == ["get-sum"]
    assert results["log"].is_error and results["log"].content.startswith("In doubt:")


async def test_an_idempotent_tool_is_served_with_the_hint() -> None:
    from mcp import Client

    from callwright import tool
    from callwright.mcp import agent_server

    @tool(idempotent=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    @tool
    def once(key: str) -> str:
        """Do it once."""
        return key

    server = agent_server(Agent(ScriptedModel([["ok"]]), [lookup, once]))
    async with Client(server) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert listed["lookup"].annotations is not None
    assert listed["lookup"].annotations.idempotent_hint is True
    assert listed["once"].annotations is None
