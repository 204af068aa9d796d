"""Nothing a client or a model sends freezes the server for everyone else, measured the way
a user feels it: the latency of a concurrent request to a real ``callwright serve``
process while the bad call runs. Before the bounds, the demo's
``calculate("((3**1000)**1000)**40")`` held the event loop for 22 s and a client tool
schema with ``"pattern": "^(a+)+$"`` about 3 s per 27 characters, doubling per one more.
The bound is the issue's: under 100 ms."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

LATENCY = 0.1

AGENT_FILE = """
import uuid
from callwright import Agent
from callwright.demo import calculate
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ScriptedModel, call

TURNS = {
    "calc": ("calculate", {"expression": "((3**1000)**1000)**40"}),
    "pick": ("pick", {"word": "a" * 400 + "!"}),
}


def script(request):
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return ["Done: " + last.content]
    turn = TURNS.get(last.content)
    if turn is None:
        return ["Hi."]
    return [call(turn[0], turn[1], id="call_" + uuid.uuid4().hex[:8])]


def make_agent():
    return Agent(ScriptedModel(script, record=False), [calculate])
"""

PICK = {
    "name": "pick",
    "description": "A front-end tool whose pattern backtracks exponentially in Python's re.",
    "parameters": {
        "type": "object",
        "properties": {"word": {"type": "string", "pattern": "^(a+)+$"}},
        "required": ["word"],
    },
}


def body(text: str, tools: list[Any] | None = None) -> dict[str, Any]:
    return {
        "threadId": f"t_{uuid.uuid4().hex}",
        "runId": f"r_{uuid.uuid4().hex}",
        "messages": [{"id": f"u_{uuid.uuid4().hex}", "role": "user", "content": text}],
        "tools": tools or [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("loop")
    (folder / "loop_agent.py").write_text(AGENT_FILE)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    agent = f"{folder / 'loop_agent.py'}:make_agent"
    process = subprocess.Popen(
        [sys.executable, "-m", "callwright.cli", "serve", "--port", str(port), "--agent", agent],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "CALLWRIGHT_SANDBOX": str(folder)},
    )
    served = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(served + "/", timeout=2)
            break
        except httpx.TransportError:
            assert process.poll() is None and time.monotonic() < deadline, "no server"
            time.sleep(0.1)
    try:
        yield served
    finally:
        process.terminate()
        process.wait(timeout=10)


async def latency_while(url: str, bad: dict[str, Any]) -> tuple[float, str]:
    """The slowest of the small runs sent while the bad request runs (at least five), and
    the bad run's text. Best of three, as in tests/test_cpu_bounds.py: a regression is
    slow every time, the machine's own scheduling only now and then."""
    best: tuple[float, str] | None = None
    for _ in range(3):
        async with httpx.AsyncClient(base_url=url, timeout=120) as http:
            await http.post("/agui", json=body("hello"))  # a warm connection
            slow = asyncio.create_task(http.post("/agui", json=bad))
            await asyncio.sleep(0.01)
            latencies: list[float] = []
            while not slow.done() or len(latencies) < 5:
                start = time.perf_counter()
                probe = await http.post("/agui", json=body("hello"))
                latencies.append(time.perf_counter() - start)
                assert probe.status_code == 200 and "Hi." in probe.text
            text = (await slow).text
        attempt = (max(latencies), text)
        if best is None or attempt[0] < best[0]:
            best = attempt
        if best[0] < LATENCY:
            break
    assert best is not None
    return best


def test_a_huge_calculation_does_not_hold_other_requests(url: str) -> None:
    worst, text = asyncio.run(latency_while(url, body("calc")))
    assert "use smaller numbers" in text  # refused before it was computed
    assert worst < LATENCY, f"a concurrent request took {worst * 1000:.0f} ms"


def test_a_backtracking_client_schema_does_not_hold_other_requests(url: str) -> None:
    worst, text = asyncio.run(latency_while(url, body("pick", [PICK])))
    assert "does not match" in text  # the argument was checked, in linear time
    assert worst < LATENCY, f"a concurrent request took {worst * 1000:.0f} ms"
