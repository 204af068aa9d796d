"""MCP both ways, on the official ``mcp`` SDK (the ``mcp`` extra).

* ``MCPServer``: an MCP server's tools inside a run, as a toolset of an ``Agent``
  (``Agent(model, tools, toolsets=[MCPServer.stdio("uvx", ["mcp-server-time"])])``).
  The server's questions (elicitation) pause the run like an approval and reach the
  human through AG-UI or the AI SDK stream.
"""

from ._client import MCPServer
from ._convert import ApprovalRule

__all__ = ["ApprovalRule", "MCPServer"]
