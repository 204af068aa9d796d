"""A small MCP server (on the mcp SDK) whose tool returns a text of megabytes, for the
artifacts tests of MCP results (client side).

    python big_server.py   # stdio
"""

from __future__ import annotations

from mcp.server import MCPServer

server = MCPServer("big")


@server.tool()
def dump(lines: int) -> str:
    """A log of `lines` lines."""
    return "".join(f"line {i:06d} status=ok value={i * 7}\n" for i in range(lines))


if __name__ == "__main__":
    server.run()
