"""Files through MCP both ways: an MCP server's image result reaches the model as an
image (server-everything's ``get-tiny-image``), and a callwright tool's image and PDF
reach an MCP client as an image block and an embedded blob resource (the official
``mcp`` client over stdio, ``callwright mcp``)."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from callwright import Agent
from callwright.mcp import MCPServer
from callwright.messages import ToolResultMessage
from callwright.models import ScriptedModel, call

AGENT = Path(__file__).resolve().parent / "files_agent.py"
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
    "2mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


async def test_an_mcp_image_result_reaches_the_model_as_an_image(everything: MCPServer) -> None:
    model = ScriptedModel([[call("get-tiny-image", id="c1")], ["A logo."]])
    async with Agent(model, toolsets=[everything]) as agent:
        result = await agent.run("Show me")
    assert result.output == "A logo."
    seen = model.requests[1].messages[-1]
    assert isinstance(seen, ToolResultMessage) and not seen.is_error
    assert seen.content.startswith("Here's the image you requested:\n[image: image/png]")
    [image] = seen.files
    assert image.media_type == "image/png"
    assert image.content().startswith(b"\x89PNG")


async def test_a_callwright_tools_files_reach_an_mcp_client() -> None:
    cli = [sys.executable, "-m", "callwright.cli", "mcp", "--agent", f"{AGENT}:make_agent"]
    params = StdioServerParameters(command=cli[0], args=cli[1:])
    async with Client(params) as client:
        result = await client.call_tool("chart", {})
    assert not result.is_error
    text, image, pdf = result.content
    assert isinstance(text, types.TextContent) and text.text.startswith("Here is the chart")
    assert isinstance(image, types.ImageContent)
    assert (image.data, image.mime_type) == (PNG, "image/png")
    assert isinstance(pdf, types.EmbeddedResource)
    blob: Any = pdf.resource
    assert isinstance(blob, types.BlobResourceContents)
    assert base64.b64decode(blob.blob) == b"%PDF-1.4\n%%EOF\n"
    assert blob.mime_type == "application/pdf" and str(blob.uri).endswith("chart.pdf")
