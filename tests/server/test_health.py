"""The probes over real HTTP: ``/healthz`` answers while the process lives, ``/readyz``
answers 503 naming the check while the journal's database is stopped, stalled or closed,
or the model has no key, and 200 again once it is back; both are public (no token),
and both keep the Host rule, except that a Host that is an IP address is served."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _postgres import PostgresServer
from callwright import Agent, MissingAPIKey
from callwright.models import AnthropicModel, LocalModel, OpenAIModel, ScriptedModel
from callwright.models.base import Model
from callwright.server import bearer_token, create_app
from callwright.store import PostgresJournal, SQLiteJournal
from live_server import Server

TOKEN = "health-check-token-0123456789"


def agent(model: Model | None = None) -> Agent:
    return Agent(model or ScriptedModel([["hi"]]))


@contextlib.contextmanager
def serving(app: Any, timeout: float = 30) -> Iterator[httpx.Client]:
    """A client of ``app`` served over real HTTP."""
    with Server(app) as server, httpx.Client(base_url=server.url, timeout=timeout) as http:
        yield http


def ready(http: httpx.Client, **headers: str) -> tuple[int, dict[str, Any]]:
    response = http.get("/readyz", headers=headers)
    assert response.headers["cache-control"] == "no-store"
    return response.status_code, response.json()


def test_the_probes_answer_without_a_token(tmp_path: Path) -> None:
    journal = SQLiteJournal(str(tmp_path / "runs.db"))
    app = create_app(agent(), journal=journal, authenticate=bearer_token(TOKEN))
    with Server(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        health = http.get("/healthz")
        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        assert ready(http) == (200, {"status": "ready", "checks": {"journal": "ok", "model": "ok"}})
        assert http.head("/healthz").status_code == 200
        # the rest stays behind the token
        assert http.get("/runs/r1/events").status_code == 401
    journal.close()


def test_without_a_journal_only_the_model_is_checked() -> None:
    with Server(create_app(agent())) as server, httpx.Client(base_url=server.url) as http:
        assert ready(http) == (200, {"status": "ready", "checks": {"model": "ok"}})


def test_a_closed_journal_is_not_ready(tmp_path: Path) -> None:
    journal = SQLiteJournal(str(tmp_path / "runs.db"))
    with serving(create_app(agent(), journal=journal)) as http:
        assert ready(http)[0] == 200
        journal.close()
        status, body = ready(http)
    assert status == 503
    assert body["status"] == "unavailable"
    assert body["checks"]["journal"] == "the database failed to answer (RuntimeError)"
    assert body["checks"]["model"] == "ok"


# --- the model's configuration -------------------------------------------------------------


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        (
            lambda: OpenAIModel("gpt-4o-mini"),
            str(MissingAPIKey("OpenAI", "OPENAI_API_KEY", "OpenAIModel")),
        ),
        (
            lambda: AnthropicModel("claude-sonnet-4-5"),
            str(MissingAPIKey("Anthropic", "ANTHROPIC_API_KEY", "AnthropicModel")),
        ),
        (lambda: LocalModel("/srv/secret-place/model.gguf"), "the model file is missing"),
    ],
    ids=["openai", "anthropic", "local"],
)
def test_a_model_that_cannot_be_asked_is_not_ready(no_keys: None, model: Any, reason: str) -> None:
    with Server(create_app(agent(model()))) as server, httpx.Client(base_url=server.url) as http:
        response = http.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "checks": {"model": reason}}
    assert "secret-place" not in response.text


@pytest.mark.parametrize(
    "model",
    [
        lambda: OpenAIModel("gpt-4o-mini", api_key="sk-test"),
        lambda: OpenAIModel("served", base_url="http://127.0.0.1:9/v1"),  # keyless server
        lambda: AnthropicModel("claude-sonnet-4-5", api_key="sk-ant-test"),
    ],
    ids=["openai-key", "openai-base-url", "anthropic-key"],
)
def test_a_configured_model_is_ready_without_a_network_call(no_keys: None, model: Any) -> None:
    """Nothing listens on port 9: a probe that asked the provider would fail."""
    with Server(create_app(agent(model()))) as server, httpx.Client(base_url=server.url) as http:
        assert ready(http) == (200, {"status": "ready", "checks": {"model": "ok"}})


def test_the_embedded_model_is_ready_when_installed() -> None:
    assert LocalModel().unconfigured() is None


# --- Host ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_the_host_rule_holds_except_for_an_address(path: str) -> None:
    with Server(create_app(agent())) as server, httpx.Client(base_url=server.url) as http:
        rebinding = http.get(path, headers={"host": "evil.example:8000"})
        assert rebinding.status_code == 400
        assert rebinding.json()["error"]["code"] == "invalid_host"
        for host in ("localhost:1234", "10.0.0.5:8000", "10.0.0.5", "[fd00::5]:8000"):
            assert http.get(path, headers={"host": host}).status_code == 200, host
    app = create_app(agent(), allowed_hosts=["app.example"])
    with Server(app) as server, httpx.Client(base_url=server.url) as http:
        assert http.get(path, headers={"host": "app.example"}).status_code == 200
        assert http.get(path, headers={"host": "192.0.2.7:8000"}).status_code == 200
        assert http.get(path, headers={"host": "other.example"}).status_code == 400
        # the other handlers keep the list: an address is not on it
        assert http.get("/", headers={"host": "192.0.2.7:8000"}).status_code == 400


# --- a database that stops or stalls -------------------------------------------------------


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """A server of this module's own: it is stopped and frozen here."""
    server = PostgresServer()
    try:
        yield server
    finally:
        server.close()


def cluster_pids(server: PostgresServer) -> list[int]:
    """The postmaster and every process it started (the backends among them)."""
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    children = subprocess.run(
        ["pgrep", "-P", str(postmaster)], capture_output=True, text=True, check=False
    ).stdout.split()
    return [postmaster, *map(int, children)]


def test_readyz_follows_a_database_that_stops_and_returns(postgres: PostgresServer) -> None:
    journal = PostgresJournal(postgres.url)
    with serving(create_app(agent(), journal=journal)) as http:
        assert ready(http)[0] == 200
        postgres.stop()
        try:
            status, body = ready(http)
            assert http.get("/healthz").status_code == 200
        finally:
            postgres.start()
        assert status == 503
        assert body["checks"]["journal"].startswith("the database failed to answer (")
        assert str(postgres.port) not in str(body)
        assert ready(http)[0] == 200
    journal.close()


def test_a_stalled_database_answers_503_and_holds_nothing(postgres: PostgresServer) -> None:
    """The cluster's processes frozen (SIGSTOP): the read never returns until they go on.
    The client's timeout is far above the probe's bound: a probe that waited on the
    database would fail the request instead of answering."""
    journal = PostgresJournal(postgres.url)
    with serving(create_app(agent(), journal=journal), timeout=15) as http:
        assert ready(http)[0] == 200
        frozen = cluster_pids(postgres)
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        try:
            first = ready(http)
            second = ready(http)  # waits on the same stuck read, not a new one
            health = http.get("/healthz").status_code
        finally:
            for pid in frozen:
                os.kill(pid, signal.SIGCONT)
        stalled = {"journal": "the database did not answer within 2 s", "model": "ok"}
        assert first == second == (503, {"status": "unavailable", "checks": stalled})
        assert health == 200
        # once the stuck read returns, the next probe reads again
        assert _eventually_ready(http)
    journal.close()


def _eventually_ready(http: httpx.Client, attempts: int = 20) -> bool:
    """Whether a probe answers 200 within a few tries (each waits up to its own bound)."""
    return any(ready(http)[0] == 200 for _ in range(attempts))
