"""One structured log line per run and per failed call, with its ids as record fields,
and never the arguments or results unless content capture is opted in."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from callwright import Agent, telemetry, tool
from callwright.models import ScriptedModel, call

SECRET = "hunter2-do-not-log"


@tool
async def login(password: str) -> str:
    """Log in; always refused."""
    raise ValueError("wrong password")


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.INFO, logger="callwright")
    yield caplog
    telemetry.configure()


def model() -> ScriptedModel:
    return ScriptedModel([[call("login", {"password": SECRET}, id="c_login")], ["No luck."]])


def records(caplog: pytest.LogCaptureFixture, name: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == name]


async def test_one_line_per_run_and_per_failed_call(logs: pytest.LogCaptureFixture) -> None:
    result = await Agent(model(), [login], name="gatekeeper").run("log in", thread_id="t_log")

    (run,) = records(logs, "callwright.run")
    assert run.levelno == logging.INFO
    assert run.run_id == result.run_id  # type: ignore[attr-defined]
    assert run.thread_id == "t_log"  # type: ignore[attr-defined]
    assert run.agent == "gatekeeper"  # type: ignore[attr-defined]
    assert run.status == "completed"  # type: ignore[attr-defined]
    assert run.input_tokens == 20 and run.requests == 2  # type: ignore[attr-defined]
    assert result.run_id in run.getMessage() and "t_log" in run.getMessage()

    (failed,) = records(logs, "callwright.call")
    assert failed.levelno == logging.WARNING  # the tool itself failed
    assert failed.call_id == "c_login"  # type: ignore[attr-defined]
    assert failed.run_id == result.run_id  # type: ignore[attr-defined]
    assert failed.thread_id == "t_log"  # type: ignore[attr-defined]
    assert failed.tool_name == "login"  # type: ignore[attr-defined]
    assert failed.error_kind == "failed"  # type: ignore[attr-defined]
    assert failed.error == "wrong password"  # type: ignore[attr-defined]
    assert not hasattr(failed, "arguments")
    assert all(SECRET not in r.getMessage() for r in logs.records)
    assert all(SECRET not in repr(vars(r)) for r in logs.records)


async def test_arguments_are_logged_only_when_opted_in(logs: pytest.LogCaptureFixture) -> None:
    telemetry.configure(capture_content=True)
    await Agent(model(), [login]).run("log in")
    (failed,) = records(logs, "callwright.call")
    assert failed.arguments == {"password": SECRET}  # type: ignore[attr-defined]


async def test_a_refused_call_is_info_and_a_closed_run_says_so(
    logs: pytest.LogCaptureFixture,
) -> None:
    refused = ScriptedModel([[call("nowhere", {}, id="c_x")], ["Ok."]])
    await Agent(refused).run("go")
    (failed,) = records(logs, "callwright.call")
    assert failed.levelno == logging.INFO and failed.error_kind == "not-found"  # type: ignore[attr-defined]

    logs.clear()
    run = Agent(ScriptedModel([["Hello."]])).start("hi")
    events = run.events()
    await anext(events)
    await events.aclose()
    (closed,) = records(logs, "callwright.run")
    assert closed.status == "closed"  # type: ignore[attr-defined]
