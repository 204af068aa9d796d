"""MCP both ways, on the official ``mcp`` SDK (the ``mcp`` extra).

* ``MCPServer``: an MCP server's tools inside a run, as a toolset of an ``Agent``
  (``Agent(model, tools, toolsets=[MCPServer.stdio("uvx", ["mcp-server-time"])])``).
  The server's questions (elicitation) pause the run like an approval and reach the
  human through AG-UI or the AI SDK stream.
* ``serve_stdio`` (``callwright mcp``), ``MCPEndpoint`` and ``mount_mcp``: an agent's
  server tools, and optionally the agent itself as one tool, served to MCP clients;
  approvals are asked through the client's elicitation.

Both sides speak the 2026-07-28 revision (no handshake, no session, ``server/discover``)
and the 2025-11-25 one, and the tasks extension (``io.modelcontextprotocol/tasks``) for
long-running calls; W3C trace context travels in each request's ``_meta``.
"""

from ._client import MCPServer
from ._config import load_mcp_config
from ._convert import ApprovalRule
from ._sampling import Sampling
from ._serve import MCPEndpoint, mount_mcp, serve_stdio
from ._server import AgentServer, agent_server

__all__ = [
    "AgentServer",
    "ApprovalRule",
    "MCPEndpoint",
    "MCPServer",
    "Sampling",
    "agent_server",
    "load_mcp_config",
    "mount_mcp",
    "serve_stdio",
]
