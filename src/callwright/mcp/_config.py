"""MCP servers from a config file in the shape other tools use (Claude Desktop, Cursor):

    {"mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {}},
        "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "..."}}}}

Each entry becomes an ``MCPServer`` named after its key. callwright's own options go
beside them: ``prefix``, ``requiresApproval`` (true, false, or absent for the tool
hints), ``timeout`` (seconds) and ``sampling`` (true, or ``{"maxTokens": N,
"maxRequests": M}``: the server may use the run's model, see ``Sampling``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._errors import ConfigurationError
from ._client import MCPServer
from ._sampling import Sampling


class MCPConfigError(ConfigurationError):
    """The config file is not the ``{"mcpServers": {...}}`` shape."""


def load_mcp_config(source: str | Path | dict[str, Any]) -> list[MCPServer]:
    """The servers of a config file (or its parsed content), in the file's order."""
    data = source if isinstance(source, dict) else json.loads(Path(source).read_text("utf-8"))
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise MCPConfigError('an MCP config needs an "mcpServers" object')
    return [_server(name, entry) for name, entry in servers.items()]


def _server(name: str, entry: Any) -> MCPServer:
    if not isinstance(entry, dict):
        raise MCPConfigError(f"mcpServers.{name} must be an object")
    options: dict[str, Any] = {"name": name}
    if isinstance(entry.get("prefix"), str):
        options["prefix"] = entry["prefix"]
    if isinstance(entry.get("requiresApproval"), bool):
        options["requires_approval"] = entry["requiresApproval"]
    if isinstance(entry.get("timeout"), int | float):
        options["timeout"] = float(entry["timeout"])
    if "sampling" in entry:
        options["sampling"] = _sampling(name, entry["sampling"])
    if isinstance(entry.get("command"), str):
        args = entry.get("args", [])
        env = entry.get("env")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise MCPConfigError(f"mcpServers.{name}.args must be a list of strings")
        if env is not None and not isinstance(env, dict):
            raise MCPConfigError(f"mcpServers.{name}.env must be an object")
        return MCPServer.stdio(entry["command"], args, env or None, cwd=entry.get("cwd"), **options)
    if isinstance(entry.get("url"), str):
        headers = entry.get("headers", {})
        if not isinstance(headers, dict):
            raise MCPConfigError(f"mcpServers.{name}.headers must be an object")
        return MCPServer.http(entry["url"], headers, **options)
    raise MCPConfigError(f"mcpServers.{name} needs a command (stdio) or a url (streamable HTTP)")


def _sampling(name: str, value: Any) -> Sampling | bool:
    if isinstance(value, bool):
        return value
    default = Sampling()
    limits = value if isinstance(value, dict) else None
    tokens = limits.get("maxTokens", default.max_tokens) if limits is not None else None
    requests = limits.get("maxRequests", default.max_requests) if limits is not None else None
    if not (isinstance(tokens, int) and tokens > 0 and isinstance(requests, int) and requests > 0):
        raise MCPConfigError(
            f'mcpServers.{name}.sampling is true, false or {{"maxTokens": N, "maxRequests": M}} '
            "(positive integers)"
        )
    return Sampling(max_tokens=tokens, max_requests=requests)
