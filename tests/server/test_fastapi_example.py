"""The FastAPI example (examples/fastapi_app.py) over real HTTP: callwright's endpoints
mounted in someone else's app, behind that app's bearer-token authentication, driven
by httpx and by the real npm clients."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from _sse import frames
from callwright import Agent
from callwright.messages import ToolResultMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.store import SQLiteJournal
from live_server import Server

TOKENS = {"token-of-alice": "alice", "token-of-bob": "bob"}
ALICE = {"authorization": "Bearer token-of-alice"}
BOB = {"authorization": "Bearer token-of-bob"}
MODEL_CALLS: list[int] = []


def script(request: ModelRequest) -> list[Any]:
    MODEL_CALLS.append(1)
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return [f"You are {last.content}."]
    return [call("whoami", {}, id=f"call_{uuid.uuid4().hex[:8]}")]


@pytest.fixture
def served(example: ModuleType, tmp_path: Path) -> Iterator[tuple[Server, SQLiteJournal]]:
    journal = SQLiteJournal(str(tmp_path / "runs.db"))
    agent = Agent(ScriptedModel(script, record=False), [example.whoami])
    with Server(example.build_app(agent, TOKENS, journal=journal)) as server:
        server.journal = journal
        yield server, journal
    journal.close()


def agui_body(text: str = "who am I?") -> dict[str, Any]:
    return {
        "threadId": f"t_{uuid.uuid4().hex}",
        "runId": f"r_{uuid.uuid4().hex}",
        "messages": [{"id": "u1", "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


def chat_body(text: str = "who am I?") -> dict[str, Any]:
    return {
        "id": f"chat_{uuid.uuid4().hex}",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}],
    }


@pytest.mark.parametrize(
    "headers",
    [{}, {"authorization": "Bearer wrong"}, {"authorization": "Basic token-of-alice"}],
    ids=["none", "wrong-token", "not-bearer"],
)
def test_every_endpoint_refuses_a_caller_without_a_valid_token(
    served: tuple[Server, SQLiteJournal], headers: dict[str, str]
) -> None:
    server, _ = served
    MODEL_CALLS.clear()
    with httpx.Client(base_url=server.url, timeout=30, headers=headers) as http:
        responses = [
            http.post("/agui", json=agui_body()),
            http.post("/api/chat", json=chat_body()),
            http.get("/api/chat/anything/stream"),
            http.get("/runs/anything/events"),
        ]
    for response in responses:
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
    assert MODEL_CALLS == []  # refused before any run started


def test_agui_tools_see_the_deps_of_the_caller(served: tuple[Server, SQLiteJournal]) -> None:
    server, _ = served
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for headers, user in ((ALICE, "alice"), (BOB, "bob")):
            response = http.post("/agui", json=agui_body(), headers=headers)
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            events = frames(response.text)
            result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
            assert result["content"] == user
            text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
            assert text == f"You are {user}."
            assert events[-1]["type"] == "RUN_FINISHED"


def test_ai_sdk_tools_see_the_deps_of_the_caller(served: tuple[Server, SQLiteJournal]) -> None:
    server, _ = served
    with httpx.Client(base_url=server.url, timeout=30) as http:
        response = http.post("/api/chat", json=chat_body(), headers=BOB)
    assert response.status_code == 200
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    chunks = frames(response.text)
    output = next(c for c in chunks if c["type"] == "tool-output-available")
    assert output["output"] == "bob"
    assert response.text.endswith("data: [DONE]\n\n")


def test_the_ai_sdk_resume_route_is_mounted(served: tuple[Server, SQLiteJournal]) -> None:
    """``useChat({ resume: true })`` asks ``GET /api/chat/{id}/stream`` on every load: a
    chat with nothing running is a 204, not a 404 the client would show as an error."""
    server, _ = served
    with httpx.Client(base_url=server.url, timeout=30, headers=ALICE) as http:
        idle = http.get(f"/api/chat/chat_{uuid.uuid4().hex}/stream")
    assert idle.status_code == 204


def test_the_probes_are_mounted_and_need_no_token(served: tuple[Server, SQLiteJournal]) -> None:
    """A load balancer sends no token: ``/healthz`` and ``/readyz`` answer without one."""
    server, _ = served
    with httpx.Client(base_url=server.url, timeout=30) as http:
        health, ready = http.get("/healthz"), http.get("/readyz")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    assert ready.status_code == 200 and ready.json()["status"] == "ready"


def test_a_dropped_stream_is_replayed_to_an_authenticated_caller(
    served: tuple[Server, SQLiteJournal],
) -> None:
    server, _ = served
    with httpx.Client(base_url=server.url, timeout=30, headers=ALICE) as http:
        response = http.post("/agui", json=agui_body())
        run_id = response.headers["x-callwright-run-id"]
        replay = http.get(f"/runs/{run_id}/events", params={"after": 2})
        unknown = http.get("/runs/no-such-run/events")
    sent = [b + "\n\n" for b in response.text.split("\n\n") if b]
    assert replay.status_code == 200
    assert replay.text == "".join(sent[2:])
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "unknown_run"


def test_a_refusal_keeps_callwrights_error_shape(served: tuple[Server, SQLiteJournal]) -> None:
    server, _ = served
    with httpx.Client(base_url=server.url, timeout=30, headers=ALICE) as http:
        response = http.post(
            "/agui", content=b"{not json", headers={"content-type": "application/json"}
        )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"


# --- the real npm clients --------------------------------------------------------------


def drive(scenarios: ModuleType, client: str, url: str, headers: dict[str, str]) -> Any:
    """Every scenario of tests/js/drive.mjs, played by one npm client with ``headers``."""
    if not scenarios.NODE.exists():
        pytest.fail(f"{scenarios.NODE} is missing: run `make test` (it runs npm ci in tests/js)")
    proc = subprocess.run(
        [str(scenarios.NODE), str(scenarios.JS_DIR / "drive.mjs"), client, url],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=scenarios.JS_DIR,
        env={**os.environ, "NODE_ENV": "test", "DRIVE_HEADERS": json.dumps(headers)},
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        pytest.fail(f"drive.mjs {client} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout)["scenarios"]


@pytest.fixture(params=["memory", "journal"])
def scenario_app(
    request: pytest.FixtureRequest, example: ModuleType, scenarios: ModuleType, tmp_path: Path
) -> Iterator[str]:
    """The example app serving the wire tests' scenario agent, without and with a journal."""
    journal = SQLiteJournal(str(tmp_path / "runs.db")) if request.param == "journal" else None
    app = example.build_app(scenarios.make_agent(), TOKENS, journal=journal)
    with Server(app) as server:
        yield server.url
    if journal is not None:
        journal.close()


def test_agui_client_through_the_mounted_endpoints(
    scenario_app: str, scenarios: ModuleType
) -> None:
    report = drive(scenarios, "agui1", scenario_app, ALICE)
    for name in ("chat", "weather", "color", "deploy"):
        runs = report[name]["runs"]
        assert all(run["error"] is None for run in runs), (name, runs)
        assert all(run["events"][-1]["type"] == "RUN_FINISHED" for run in runs), name
        assert report[name]["printed"] == [], name
    approve = report["approve"]
    first, second, again = approve["runs"]
    assert first["events"][-1]["outcome"]["type"] == "interrupt"
    assert second["error"] is None and second["events"][-1]["type"] == "RUN_FINISHED"
    contents = [m.get("content") for m in approve["messages"] if m["role"] == "assistant"]
    assert contents[-1] == "Done: delete_file=deleted /tmp/report.txt"
    assert "409" in again["error"]  # an approval is honoured once
    conflict = report["conflict"]["runs"][0]["error"]
    assert "HTTP 409" in conflict and "tool_conflict" in conflict


def test_ai_sdk_client_through_the_mounted_endpoints(
    scenario_app: str, scenarios: ModuleType
) -> None:
    report = drive(scenarios, "ai6", scenario_app, BOB)
    for name in ("chat", "weather", "color", "deploy", "approve"):
        result = report[name]
        assert result["status"] == "ready" and result["error"] is None, (name, result)
        assert result["errors"] == [] and result["printed"] == [], name
    last = report["approve"]["messages"][-1]
    text = "".join(p["text"] for p in last["parts"] if p["type"] == "text")
    assert text == "Done: delete_file=deleted /tmp/report.txt"
    assert json.loads(report["conflict"]["error"])["error"]["code"] == "tool_conflict"
