"""Producer conformance: the streams callwright's test servers sent, checked against the
protocols' own schemas (AG-UI's vendored JSON Schema, the ``ai`` packages' chunk schemas)
and the sequencing rules of their specifications.

``tests/live_server.Server`` records every event stream it serves (``traffic``);
``problems(exchanges)`` checks a batch of them (one node process for all AI SDK streams).
The wire, server, durable, examples and playground tests check their module's traffic
when the module ends (tests/durable records it on the client side: its replicas are
processes of their own).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from . import agui, aisdk
from .traffic import CHECKING, EXCHANGES, Exchange, record, record_clients

__all__ = [
    "EXCHANGES",
    "Exchange",
    "conformance_check",
    "problems",
    "record",
    "record_clients",
]


@pytest.fixture(scope="module", autouse=True)
def conformance_check() -> Iterator[None]:
    """Checks every event stream the module's tests were served, when the module ends (a
    conftest imports it to apply it to its folder)."""
    start = len(EXCHANGES)
    CHECKING[0] += 1
    try:
        yield
    finally:
        CHECKING[0] -= 1
    found = problems(EXCHANGES[start:])
    del EXCHANGES[start:]
    if found:
        pytest.fail("streams that break their protocol:\n" + "\n".join(found[:40]), False)


def problems(exchanges: list[Exchange]) -> list[str]:
    """Every conformance problem of ``exchanges``, each prefixed with its request (and, with
    ``CONFORMANCE_DUMP=dir`` set, each failing exchange written there as JSON)."""
    out: list[str] = []
    streams: list[tuple[str, Exchange, dict[str, object]]] = []
    threads: dict[str, set[str]] = {}
    versions = aisdk.run_versions(exchanges)
    for exchange in exchanges:
        name = f"{exchange.method} {exchange.path}"
        if exchange.query:
            name += f"?{exchange.query}"
        if "x-vercel-ai-ui-message-stream" in exchange.response_headers:
            found, stream = aisdk.check(exchange, versions)
            streams.append((name, exchange, stream))
        elif _is_agui(exchange):
            thread, started = agui.started_calls(exchange)
            found = agui.check(exchange, threads.get(thread or "", set()))
            threads.setdefault(thread or "", set()).update(started)
        else:
            continue
        out += [f"{name}: {problem}" for problem in found]
        if found:
            _dump(exchange, found)
    verdicts = aisdk.node_errors([stream for _, _, stream in streams])
    for (name, exchange, stream), found in zip(streams, verdicts, strict=True):
        out += [f"{name} (ai {stream['version']}): {problem}" for problem in found]
        if found:
            _dump(exchange, found)
    return out


def _dump(exchange: Exchange, found: list[str]) -> None:
    folder = os.environ.get("CONFORMANCE_DUMP")
    if not folder:
        return
    record = {
        "request": f"{exchange.method} {exchange.path}?{exchange.query}",
        "headers": exchange.headers,
        "body": exchange.json_body(),
        "stream": exchange.stream.decode("utf-8", "replace"),
        "problems": found,
    }
    path = Path(folder) / f"{uuid.uuid4().hex[:8]}.json"
    path.write_text(json.dumps(record, indent=1))


def _is_agui(exchange: Exchange) -> bool:
    """An AG-UI stream (the other event streams served are MCP's)."""
    head = bytes(exchange.stream[:200])
    if exchange.path.endswith("/agui") or exchange.path.startswith("/runs/"):
        return True
    return b'"type":"RUN_STARTED"' in head.replace(b" ", b"")
