"""Freeze: does any one request within the body limit hold every other request?

Each shape below (the bodies of issue 24's red-team pass) is sent to a real
``callwright serve`` process with a SQLite journal, pinned to one core, while this
process, pinned to the other (``pick_cores``/``pinned`` of bench/load.py), sends
``GET /`` every 20 ms on its own connection. Reported per shape: the worst and the p99
latency of those ``GET /`` sent while the shape's request was in flight (each shape sent
``--repeats`` times, one after the other), the median of each repeat's worst, and the
shape's own status and error code. A baseline row measures ``GET /`` with nothing else
sent: the machine's own noise. Goal: no shape delays another request by more than
100 ms.

Run: ``python bench/freeze.py`` (``--shape NAME`` for one; ``--list`` for the names).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from load import percentile, pick_cores, pinned

GOAL = 0.1
PROBE_EVERY = 0.02
REPLAY_WORDS = 58_000

FOLLOWERS = 200
LIVE_WORDS = 400

AGENT_FILE = f"""
import asyncio

from callwright import Agent, tool
from callwright.models import ScriptedModel


@tool(requires_approval=True)
def write(text: str) -> str:
    "A server tool that asks for approval first."
    return text


WORDS = {REPLAY_WORDS}


def script(request):
    if request.messages[-1].content == "long":
        return [" ".join(["w"] * WORDS)]
    if request.messages[-1].content == "live":
        return [" ".join(["w"] * {LIVE_WORDS})]
    return ["Hi."]


async def _slowly(parts):
    async for part in parts:
        await asyncio.sleep(0.01)
        yield part


class Model(ScriptedModel):
    "A live run (``live``) streams a word every 10 ms; the rest at once."

    def stream(self, request):
        parts = super().stream(request)
        return _slowly(parts) if request.messages[-1].content == "live" else parts


def make_agent():
    return Agent(Model(script, split_text=True, record=False), [write])
"""

Body = dict[str, Any]
COMPACT = (",", ":")


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def agui(text: str = "hello", **fields: Any) -> Body:
    body: Body = {
        "threadId": _id("t"),
        "runId": _id("r"),
        "messages": [{"id": _id("u"), "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    body.update(fields)
    return body


def chat(parts: list[Any] | None = None, **fields: Any) -> Body:
    message = {"id": _id("u"), "role": "user", "parts": parts or [{"type": "text", "text": "hi"}]}
    return {"id": _id("c"), "messages": [message], **fields}


def pending_calls(n: int) -> Body:
    """An assistant turn with ``n`` calls of a tool that asks for approval, none answered."""
    arguments = json.dumps({"text": "x"})
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": "write", "arguments": arguments}}
        for i in range(n)
    ]
    body = agui()
    body["messages"].append({"id": _id("a"), "role": "assistant", "toolCalls": calls})
    return body


def heavy_tools(n: int, properties: int) -> list[Any]:
    """Tools whose schemas cost real work to check and compile: patterns."""
    return [
        {
            "name": f"heavy_{i}",
            "parameters": {
                "type": "object",
                "properties": {
                    f"f{j}": {"type": "string", "pattern": f"^[a-z]{{1,{j % 9 + 1}}}-{i}-{j}$"}
                    for j in range(properties)
                },
            },
        }
        for i in range(n)
    ]


def enum_tool(n: int) -> Body:
    schema = {"type": "object", "properties": {"x": {"enum": list(range(n))}}}
    return agui(tools=[{"name": "pick", "parameters": schema}])


def pattern_tools(n: int) -> list[Any]:
    schema = {"type": "object", "properties": {"w": {"type": "string", "pattern": "^[a-z]+$"}}}
    return [{"name": f"p{i}", "parameters": schema} for i in range(n)]


SHAPES: dict[str, Callable[[], Body | bytes]] = {
    "110,000 AG-UI client tools": lambda: agui(tools=[{"name": f"t{i}"} for i in range(110_000)]),
    "100,000 AI SDK tools": lambda: chat(tools=[{"name": f"t{i}"} for i in range(100_000)]),
    "25,000 tools with a pattern": lambda: agui(tools=pattern_tools(25_000)),
    "1.39M empty lists in forwardedProps": lambda: agui(forwardedProps={"x": [[]] * 1_390_000}),
    "230,000 state keys, new thread": lambda: agui(state={f"k{i}": i for i in range(230_000)}),
    "190,000 step-start parts": lambda: chat([{"type": "step-start"}] * 190_000),
    "10,001 forged pending calls": lambda: pending_calls(10_001),
    "a 500,000-value enum": lambda: enum_tool(500_000),
    "one 4 MiB string": lambda: agui("x" * (4 * 1024 * 1024 - 400)),
    "1M-deep nesting": lambda: b'{"messages": ' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}",
    # at the limits: the most work a body may still cause
    "at the limit: 149,000 numbers in forwardedProps": lambda: agui(
        forwardedProps={"x": [1] * 149_000}
    ),
    "at the limit: 10,000 state keys, new thread": lambda: agui(
        state={f"k{i}": i for i in range(10_000)}
    ),
    "at the limit: 128 tools of 100 patterned fields": lambda: agui(tools=heavy_tools(128, 100)),
    "at the limit: 20,000 AI SDK text parts": lambda: chat(
        [{"type": "text", "text": "w"}] * 20_000
    ),
    "at the limit: 29 tools of a 4,996-value enum": lambda: agui(
        tools=[{**enum_tool(4_996)["tools"][0], "name": f"e{i}"} for i in range(29)]
    ),
}
ENDPOINT = {
    "100,000 AI SDK tools": "/api/chat",
    "190,000 step-start parts": "/api/chat",
    "at the limit: 20,000 AI SDK text parts": "/api/chat",
}
REPLAY = f"replay of a {REPLAY_WORDS // 1000}k-frame run"
FOLLOWED = f"{FOLLOWERS} followers of one live run ({LIVE_WORDS} words, 10 ms apart)"
ARRIVAL = f"{FOLLOWERS} GET / at once (the followers' arrival alone)"
BASELINE = "baseline: no request, 1 s"


class Server:
    """``callwright serve`` with a SQLite journal, pinned to ``core``."""

    def __init__(self, folder: Path, core: int) -> None:
        (folder / "freeze_agent.py").write_text(AGENT_FILE)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        argv = [sys.executable, "-m", "callwright.cli", "serve", "--port", str(port)]
        argv += ["--agent", f"{folder / 'freeze_agent.py'}:make_agent"]
        argv += ["--journal", str(folder / "runs.db")]
        self.log = (folder / "server.log").open("w+b")
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            env={**os.environ, "CALLWRIGHT_SANDBOX": str(folder)},
            preexec_fn=lambda: os.sched_setaffinity(0, {core}),
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(self.url + "/", timeout=2)
                return
            except httpx.TransportError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.1)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


async def probe_while(
    url: str, send: Callable[[httpx.AsyncClient], Any]
) -> tuple[list[float], str]:
    """``GET /`` latencies, one sent every 20 ms while ``send`` runs, and its outcome."""
    latencies: list[float] = []
    async with (
        httpx.AsyncClient(base_url=url, timeout=300) as big,
        httpx.AsyncClient(base_url=url, timeout=300) as probe,
    ):
        await probe.get("/")
        await big.get("/")
        task = asyncio.create_task(send(big))
        while not task.done():
            start = time.perf_counter()
            await probe.get("/")
            latencies.append(time.perf_counter() - start)
            await asyncio.sleep(max(0.0, PROBE_EVERY - (time.perf_counter() - start)))
        return latencies, await task


def post(endpoint: str, payload: Body | bytes) -> Callable[[httpx.AsyncClient], Any]:
    data = payload
    if not isinstance(data, bytes):
        data = json.dumps(payload, separators=COMPACT).encode()

    async def send(http: httpx.AsyncClient) -> str:
        headers = {"content-type": "application/json"}
        r = await http.post(endpoint, content=data, headers=headers)
        code = ""
        if r.headers.get("content-type", "").startswith("application/json"):
            code = " " + str(r.json().get("error", {}).get("code", ""))
        elif "RUN_ERROR" in r.text or '"type":"error"' in r.text:
            code = " with an error event"
        return f"{r.status_code}{code} ({len(data) / 2**20:.2f} MiB)"

    return send


async def replay_send(url: str) -> Callable[[httpx.AsyncClient], Any]:
    body = agui("long")
    async with httpx.AsyncClient(base_url=url, timeout=300) as http:
        r = await http.post("/agui", json=body)
        frames = r.text.count("\ndata:") + r.text.startswith("data:")

    async def send(http: httpx.AsyncClient) -> str:
        r = await http.get(f"/runs/{body['runId']}/events", params={"after": 0})
        return f"{r.status_code} ({frames} frames)"

    return send


async def _follow(host: str, port: int, path: str) -> int:
    """One follower on its own connection, read as raw bytes to its end: its bytes."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    size = 0
    while chunk := await reader.read(65536):
        size += len(chunk)
    writer.close()
    return size


async def followers(url: str, count: int) -> list[int]:
    """``count`` followers of ``url`` (``http://host:port/path``) at once: their bytes."""
    host, _, rest = url.removeprefix("http://").partition(":")
    port, _, path = rest.partition("/")
    return await asyncio.gather(*(_follow(host, int(port), "/" + path) for _ in range(count)))


async def followers_send(url: str) -> Callable[[httpx.AsyncClient], Any]:
    """``FOLLOWERS`` clients following one live run's ``GET /runs/{id}/events`` from its
    start to its end (a word every 10 ms), while the probe runs. The followers are
    another process (``--followers``): their own reading is not counted against the
    probe's loop."""

    async def send(http: httpx.AsyncClient) -> str:
        body = agui("live")
        started = asyncio.Event()

        async def live() -> tuple[int, int]:
            async with http.stream("POST", "/agui", json=body) as response:
                size = 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    started.set()
                return response.status_code, size

        run = asyncio.create_task(live())
        await started.wait()
        replay = f"{url}/runs/{body['runId']}/events?after=0"
        process = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--followers", replay, stdout=subprocess.PIPE
        )
        out, _ = await process.communicate()
        sizes = json.loads(out)
        status, whole = await run
        ok = sum(size >= whole for size in sizes)
        return f"{status}, {ok}/{FOLLOWERS} followers read it whole"

    return send


async def arrival(http: httpx.AsyncClient) -> str:
    """``FOLLOWERS`` plain ``GET /`` sent at once from another process, as the followers
    are: what accepting and routing that many connections costs, following nothing."""
    url = f"{http.base_url}".rstrip("/") + "/"
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--followers", url, stdout=subprocess.PIPE
    )
    out, _ = await process.communicate()
    ok = sum(size > 0 for size in json.loads(out))
    return f"{ok}/{FOLLOWERS} answered"


def row(name: str, runs: Sequence[Sequence[float]], outcome: str) -> str:
    """Over every repeat: the p99 and worst of all probes, and the median of each repeat's
    worst (one slow probe on a shared machine is not the server's doing every time)."""
    every = [x for run in runs for x in run]
    worst = max(every) * 1000
    p99 = percentile(every, 0.99) * 1000
    typical = statistics.median(max(run) for run in runs) * 1000
    verdict = "yes" if worst <= GOAL * 1000 else "**no**"
    cells = f"{len(every)} | {p99:.0f} | {worst:.0f} | {typical:.0f} | {verdict}"
    return f"| {name} | {outcome} | {cells} |"


async def idle(http: httpx.AsyncClient) -> str:
    await asyncio.sleep(1)
    return "—"


async def main_async(names: Sequence[str], url: str, repeats: int) -> list[str]:
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:  # first-request costs
        await http.post("/agui", json=agui())
        await http.post("/api/chat", json=chat())
    rows = []
    for name in names:
        runs, outcomes = [], []
        for _ in range(repeats):  # a new body (new ids) each time
            if name == REPLAY:
                send = await replay_send(url)
            elif name == FOLLOWED:
                send = await followers_send(url)
            elif name == BASELINE:
                send = idle
            elif name == ARRIVAL:
                send = arrival
            else:
                send = post(ENDPOINT.get(name, "/agui"), SHAPES[name]())
            latencies, outcome = await probe_while(url, send)
            runs.append(latencies)
            outcomes.append(outcome)
        outcome = " / ".join(dict.fromkeys(outcomes))
        rows.append(row(name, runs, outcome))
        print(rows[-1], flush=True)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", action="append", help="only this shape (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the shapes and exit")
    parser.add_argument("--repeats", type=int, default=5, help="times each shape is sent")
    parser.add_argument("--followers", help=argparse.SUPPRESS)  # the followers' process
    args = parser.parse_args(argv)
    if args.followers:
        print(json.dumps(asyncio.run(followers(args.followers, FOLLOWERS))))
        return 0
    every = [BASELINE, *SHAPES, REPLAY, ARRIVAL, FOLLOWED]
    if args.list:
        print("\n".join(every))
        return 0
    names = args.shape or every
    server_core, client_core = pick_cores()
    print(f"server on core {server_core}, client on core {client_core}; goal {GOAL * 1000:.0f} ms")
    print("| shape | its status | GET / sent | p99 ms | worst ms | median worst ms | within goal |")
    print("|---|---|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp), server_core)
        try:
            with pinned(client_core):
                asyncio.run(main_async(names, server.url, args.repeats))
        finally:
            server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
