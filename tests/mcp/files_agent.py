"""An agent whose tool returns an image, served over MCP by ``callwright mcp`` in
tests/mcp/test_tool_files.py."""

from __future__ import annotations

import base64
from typing import Any

from callwright import Agent, File, tool
from callwright.models import ScriptedModel

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
    "2mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@tool
def chart() -> list[Any]:
    """Draw the chart."""
    pdf = File(b"%PDF-1.4\n%%EOF\n", "application/pdf", filename="chart.pdf")
    return ["Here is the chart", File(base64.b64decode(PNG), "image/png"), pdf]


def make_agent() -> Agent:
    return Agent(ScriptedModel([["unused"]]), tools=[chart])
