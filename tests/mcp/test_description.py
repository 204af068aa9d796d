"""An agent served as an MCP tool is described by its ``description``, never by its
instructions (its private system prompt), in the tool list and in the server's own
``instructions`` alike; driven by the official ``mcp`` client over the SDK's in-memory
transport."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from callwright import Agent
from callwright.mcp import agent_server
from callwright.models import ScriptedModel

SECRET = "You are Ops-Bot. Internal escalation code: 4417-ZULU."


async def listed(agent: Agent[Any, Any], **options: Any) -> tuple[dict[str, Any], str | None]:
    async with Client(agent_server(agent, **options)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        return tools, client.instructions


async def test_the_agent_tool_has_the_given_description() -> None:
    about = "Answers questions about deploys."
    agent = Agent(ScriptedModel([]), name="ops", description=about, instructions=SECRET)
    tools, instructions = await listed(agent, expose_agent=True)
    assert tools["ops"].description == about
    assert instructions == about


@pytest.mark.parametrize(
    ("name", "expose", "tool"), [("ops", True, "ops"), (None, "ask", "ask")], ids=["named", "not"]
)
async def test_without_a_description_the_agent_tool_is_described_neutrally(
    name: str | None, expose: bool | str, tool: str
) -> None:
    agent = Agent(ScriptedModel([]), name=name, instructions=SECRET)
    tools, instructions = await listed(agent, expose_agent=expose)
    description = tools[tool].description or ""
    assert description.startswith(f"Ask the {name or tool} agent")
    assert "4417" not in description and "Ops-Bot" not in description
    assert instructions is None  # the system prompt is not the server's instructions either


async def test_the_agent_answers_through_the_described_tool() -> None:
    agent = Agent(ScriptedModel([["deploys are on Fridays"]]), name="ops", instructions=SECRET)
    async with Client(agent_server(agent, expose_agent=True)) as client:
        result = await client.call_tool("ops", {"prompt": "when?"})
    assert not result.is_error
    assert result.content[0].text == "deploys are on Fridays"  # type: ignore[union-attr]
