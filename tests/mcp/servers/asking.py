"""A small MCP server (on the mcp SDK's own 2026-07-28 API) whose tools ask the user with
multi-round-trip elicitation: the call returns an ``InputRequiredResult`` (the questions
and a sealed ``requestState``), and the client calls again with the answers.

Its request state is sealed under ``ASKING_KEY`` when that is set (so a restarted server
still accepts state it minted before), under a key of this process otherwise (the SDK's
default: state from before a restart is refused).

    python asking.py            # stdio
    python asking.py http PORT  # streamable HTTP on 127.0.0.1:PORT
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

from mcp.server import MCPServer
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import RequestStateSecurity
from mcp.server.mcpserver.resolve import Elicit, Resolve, Sample
from mcp.types import CreateMessageResult, SamplingMessage, TextContent
from pydantic import BaseModel, Field

KEY = os.environ.get("ASKING_KEY")
security = RequestStateSecurity(keys=[KEY]) if KEY else None
server = MCPServer("asking", request_state_security=security)


class Name(BaseModel):
    name: str = Field(description="Your name")


class Colour(BaseModel):
    colour: str = Field(description="Your favourite colour")


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def ask_colour(name: Annotated[Name, Resolve(ask_name)]) -> Elicit[Colour]:
    """Asked only once the name is known (a second round)."""
    return Elicit(f"{name.name}, what is your favourite colour?", Colour)


def ask_city() -> Elicit[Name]:
    return Elicit("Which city?", Name)


def sample_line() -> Sample:
    prompt = TextContent(type="text", text="Write one line about the user.")
    return Sample([SamplingMessage(role="user", content=prompt)], max_tokens=50)


def said(outcome: ElicitationResult[Name]) -> str:
    if isinstance(outcome, AcceptedElicitation):
        return f"accept {outcome.data.name}"
    return outcome.action


@server.tool()
def greet(greeting: str, answer: Annotated[ElicitationResult[Name], Resolve(ask_name)]) -> str:
    """Greets the user by the name it asks for; says what the user answered otherwise."""
    if isinstance(answer, AcceptedElicitation):
        return f"{greeting}, {answer.data.name}!"
    return f"the server saw: {answer.action}"


@server.tool()
def favourite(colour: Annotated[Colour, Resolve(ask_colour)]) -> str:
    """Asks a name, then (a second round) a colour."""
    return f"favourite: {colour.colour}"


@server.tool()
def both(
    name: Annotated[ElicitationResult[Name], Resolve(ask_name)],
    city: Annotated[ElicitationResult[Name], Resolve(ask_city)],
) -> str:
    """Asks two questions in one round."""
    return f"name={said(name)} city={said(city)}"


@server.tool()
def dedicate(
    name: Annotated[Name, Resolve(ask_name)],
    line: Annotated[CreateMessageResult, Resolve(sample_line)],
) -> str:
    """Asks the user's name and samples the client's model in the same round."""
    text = line.content.text if isinstance(line.content, TextContent) else "?"
    return f"for {name.name}: {text}"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", port=int(sys.argv[2]))
    else:
        server.run()
