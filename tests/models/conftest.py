"""A tiny HTTP server on 127.0.0.1 that replays recorded responses.

The adapters are tested through the real SDKs over real HTTP: only the
provider is replaced, by recordings of what it sends.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # a JSON body (non-streaming replies, errors)
    events: list[tuple[str | None, Any]] | None = None  # SSE: (event name, data)
    delay: float = 0.0  # seconds between SSE events
    done: bool = False  # end with `data: [DONE]` (OpenAI)


class Replay:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.url = ""

    def add(self, reply: Reply) -> None:
        self.replies.append(reply)

    def reply(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        self.add(Reply(status, headers or {}, body))

    def sse(self, data: list[Any], *, named: bool = False, done: bool = True, **kw: Any) -> None:
        events = [(d.get("type") if named else None, d) for d in data]
        self.add(Reply(events=events, done=done, **kw))


def _handler(replay: Replay) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            raw = self.rfile.read(length)
            replay.requests.append(
                {
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "json": json.loads(raw),
                }
            )
            reply = replay.replies.pop(0) if replay.replies else Reply(500, body={"error": "no"})
            if reply.events is None:
                data = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                for k, v in {"content-type": "application/json", **reply.headers}.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_response(reply.status)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            try:
                for name, data in reply.events:
                    text = data if isinstance(data, str) else json.dumps(data)
                    frame = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
                    self.wfile.write(frame.encode())
                    self.wfile.flush()
                    if reply.delay:
                        time.sleep(reply.delay)
                if reply.done:
                    self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

    return Handler


@pytest.fixture
def replay() -> Iterator[Replay]:
    state = Replay()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()
