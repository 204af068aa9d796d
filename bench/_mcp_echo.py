"""The local stdio MCP server bench/mcp_overhead.py calls: one ``echo`` tool on the mcp SDK.

python bench/_mcp_echo.py
"""

from __future__ import annotations

from mcp.server import MCPServer

server = MCPServer("echo")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    server.run()
