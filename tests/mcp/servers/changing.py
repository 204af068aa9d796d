"""A small MCP server (on the mcp SDK) for what the reference servers cannot be made to do
on demand: change its tool list while connected, and die in the middle of a call.

    python changing.py            # stdio
    python changing.py http PORT  # streamable HTTP on 127.0.0.1:PORT
"""

from __future__ import annotations

import os
import sys

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations

server = MCPServer("changing")


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Add a tool called `name` and tell the client the list changed."""

    def extra() -> str:
        return f"{name} is here"

    server.add_tool(extra, name=name, description="A tool added while connected.")
    await ctx.notify_tools_changed()
    return f"added {name}"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def wipe(target: str) -> str:
    """Destroys `target` (annotated destructive: a client asks a human first)."""
    return f"wiped {target}"


@server.tool(annotations=ToolAnnotations(read_only_hint=False))
def append(line: str) -> str:
    """Appends `line` (a writer that says no more: the spec's default makes it destructive)."""
    return f"appended {line}"


@server.tool()
async def whoami(ctx: Context) -> str:
    """The Authorization header the request came with (streamable HTTP)."""
    headers = ctx.headers or {}
    return headers.get("authorization", "nobody")


@server.tool()
def die() -> str:
    """The server process exits in the middle of the call."""
    sys.stdout.flush()
    os._exit(3)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", port=int(sys.argv[2]))
    else:
        server.run()
