"""What ``callwright tools`` says about a tool an MCP server lists: which server, and the
hints the server annotated it with (as the server wrote them, camelCase)."""

from __future__ import annotations

from typing import Any

from ..toolbox import Toolbox
from ._client import MCPServer


async def list_toolsets(box: Toolbox) -> None:
    """List every toolset of ``box`` now (what a run does before its first turn), then
    close their sessions: a listing starts stdio servers, and nothing else will stop them."""
    try:
        await box.ready()
    finally:
        await box.aclose()


def mcp_origins(box: Toolbox) -> dict[str, dict[str, Any]]:
    """For each listed MCP tool by the name the model calls it: ``{"server": name,
    "name": the server's name for it, "annotations": {hint: value}}``."""
    about: dict[str, dict[str, Any]] = {}
    for toolset in box.toolsets:
        if not isinstance(toolset, MCPServer):
            continue
        for name, listed in toolset.listed.items():
            hints = listed.annotations
            annotations = (
                hints.model_dump(by_alias=True, exclude_none=True, mode="json") if hints else {}
            )
            about[name] = {"server": toolset.name, "name": listed.name, "annotations": annotations}
    return about
