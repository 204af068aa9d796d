"""``callwright serve``'s artifact and MCP task options, through the real CLI: a served
agent keeps a large result in ``--artifacts DIR`` and the client downloads it whole; the
MCP endpoint gets the task options given; options that would be ignored are refused."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from _sse import frames
from callwright.cli import parser

AGENT_FILE = """
from callwright import Agent, tool
from callwright.messages import ToolResultMessage
from callwright.models import ScriptedModel, call

LOG = "".join(f"line {i:05d} ok\\n" for i in range(20_000))


@tool
def big_log() -> str:
    \"\"\"Returns a long log.\"\"\"
    return LOG


def turn(request):
    if isinstance(request.messages[-1], ToolResultMessage):
        return ["Done."]
    return [call("big_log", {}, id="call_big")]


def make_agent():
    return Agent(ScriptedModel(turn, record=False), [big_log])
"""
LOG = "".join(f"line {i:05d} ok\n" for i in range(20_000))
TOKEN = "serve-options-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(process: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url + "/healthz", timeout=2)
            return
        except httpx.TransportError:
            assert process.poll() is None, "callwright serve exited"
            assert time.monotonic() < deadline, "callwright serve did not come up"
            time.sleep(0.1)


def start(tmp_path: Path, *options: str) -> tuple[subprocess.Popen[bytes], str, Path]:
    (tmp_path / "big_agent.py").write_text(AGENT_FILE)
    port = free_port()
    out = tmp_path / "stdout.txt"
    with out.open("w") as stdout:
        process = subprocess.Popen(
            [sys.executable, "-m", "callwright.cli", "serve", "--port", str(port),
             "--agent", "big_agent:make_agent", *options],
            stdout=stdout, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, cwd=tmp_path,
            env={**os.environ, "COLUMNS": "300"},
        )  # fmt: skip
    return process, f"http://127.0.0.1:{port}", out


def test_artifacts_are_kept_in_the_directory_given_and_download_whole(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    process, url, out = start(
        tmp_path, "--artifacts", str(kept), "--artifact-threshold", "8192", "--token", TOKEN
    )
    auth = {"authorization": f"Bearer {TOKEN}"}
    try:
        wait_up(process, url)
        body = {
            "threadId": "t1",
            "runId": f"run-{uuid.uuid4().hex[:8]}",
            "messages": [{"id": "u1", "role": "user", "content": "the log"}],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
        }
        reply = httpx.post(url + "/agui", json=body, headers=auth, timeout=30)
        [result] = [f for f in frames(reply.text) if f["type"] == "TOOL_CALL_RESULT"]
        artifact = result["metadata"]["callwright"]["artifact"]
        assert artifact["size"] == len(LOG)
        assert len(result["content"]) < 8192  # the model got a preview
        download = httpx.get(url + artifact["url"], headers=auth, timeout=30)
        assert download.status_code == 200 and download.text == LOG
        assert httpx.get(url + artifact["url"], timeout=30).status_code == 401
        assert (kept / f"{artifact['id']}.bin").read_text() == LOG
    finally:
        process.terminate()
        process.wait(timeout=30)
    banner = out.read_text().splitlines()
    assert f"  artifacts: results over 8,192 bytes are kept in {kept}" in banner


def test_without_artifacts_the_result_reaches_the_model_whole(tmp_path: Path) -> None:
    process, url, _ = start(tmp_path)
    try:
        wait_up(process, url)
        body = {
            "threadId": "t1",
            "runId": "r1",
            "messages": [{"id": "u1", "role": "user", "content": "the log"}],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
        }
        reply = httpx.post(url + "/agui", json=body, timeout=30)
        [result] = [f for f in frames(reply.text) if f["type"] == "TOOL_CALL_RESULT"]
        assert result["content"] == LOG and "metadata" not in result
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_mcp_endpoint_gets_the_task_options(tmp_path: Path) -> None:
    from callwright._serve_cli import build_app
    from callwright.mcp import MCPEndpoint

    (tmp_path / "big_agent.py").write_text(AGENT_FILE)
    args = parser().parse_args(
        ["serve", "--agent", str(tmp_path / "big_agent.py") + ":make_agent", "--mcp-path",
         "/mcp", "--mcp-task-after", "2.5", "--mcp-task-ttl", "60", "--mcp-max-tasks", "7"]
    )  # fmt: skip
    app = build_app(args, None).app
    [endpoint] = [r.endpoint for r in app.routes if getattr(r, "path", "") == "/mcp"]
    assert isinstance(endpoint, MCPEndpoint)
    server = endpoint.agent_server
    assert (server.task_after, server.tasks.ttl, server.tasks.limit) == (2.5, 60.0, 7)
    args = parser().parse_args(
        ["serve", "--agent", str(tmp_path / "big_agent.py") + ":make_agent", "--mcp-path",
         "/mcp", "--mcp-task-after", "0"]
    )  # fmt: skip
    app = build_app(args, None).app
    [endpoint] = [r.endpoint for r in app.routes if getattr(r, "path", "") == "/mcp"]
    assert endpoint.agent_server.task_after is None  # 0: calls never become tasks


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--mcp-task-ttl", "60"], "--mcp-task-ttl needs --mcp-path"),
        (["--mcp-path", "/mcp", "--mcp-max-tasks", "0"], "--mcp-max-tasks: give 1 or more"),
        (["--artifact-threshold", "9000"], "--artifact-threshold needs --artifacts"),
        (["--artifacts", "--artifact-threshold", "100"], "give 4096 bytes or more"),
    ],
)
def test_options_that_cannot_work_are_refused(
    tmp_path: Path, options: list[str], said: str
) -> None:
    (tmp_path / "big_agent.py").write_text(AGENT_FILE)
    done = subprocess.run(
        [sys.executable, "-m", "callwright.cli", "serve", "--port", str(free_port()),
         "--agent", "big_agent:make_agent", *options],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_help_names_the_options() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "callwright.cli", "serve", "--help"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    for option in (
        "--artifacts [DIR]",
        "--artifact-threshold BYTES",
        "--mcp-task-after SECONDS",
        "--mcp-task-ttl SECONDS",
        "--mcp-max-tasks N",
    ):
        assert option in done.stdout
