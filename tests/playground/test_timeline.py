"""The playground's timeline, in real Chromium: one per turn, drawn from the AG-UI events
the page receives, updated while the run goes on.

The server here is the playground tests' agent whose model also knows "twice": two slow
``count_slowly`` calls in one step, which the server runs in parallel.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from callwright.messages import UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from live_server import Server

SHOTS = Path(__file__).resolve().parents[2] / "build" / "playground"


def _agent_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "timeline_test_agent", Path(__file__).with_name("agent.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


scripted = _agent_module()


def script(request: ModelRequest) -> list[Any]:
    user = [m for m in request.messages if isinstance(m, UserMessage)][-1]
    if request.step == 1 and "twice" in user.content.lower().split():
        return [
            call("count_slowly", {"n": 3}, id="call_count_a"),
            call("count_slowly", {"n": 3}, id="call_count_b"),
        ]
    result: list[Any] = scripted.script(request)
    return result


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    sandbox = tmp_path_factory.mktemp("timeline")
    agent = scripted.make_agent(sandbox)
    agent.model = ScriptedModel(script, split_text=True)
    with Server(create_app(agent)) as running:
        running.sandbox = sandbox
        yield running


def send(page: Page, text: str) -> None:
    page.fill("#input", text)
    page.press("#input", "Enter")


def ready(page: Page) -> None:
    expect(page.locator("#status")).to_have_text("ready")
    expect(page.locator("#send")).to_be_enabled()


def bars(page: Page, selector: str) -> Any:
    return page.locator(".timeline").last.locator(f"{selector} .tl-bar")


def call_bars(page: Page, call_id: str) -> Any:
    return bars(page, f'.tl-track[data-tool-call-id="{call_id}"]')


def states(locator: Any) -> list[str]:
    return [str(state) for state in locator.evaluate_all("bars => bars.map(b => b.dataset.state)")]


def box(locator: Any) -> dict[str, float]:
    found = locator.bounding_box()
    assert found is not None
    return found


def test_parallel_calls_sit_side_by_side_and_grow_while_they_run(page: Page) -> None:
    send(page, "count twice")
    a, b = call_bars(page, "call_count_a").last, call_bars(page, "call_count_b").last
    for bar in (a, b):  # both running at once, each on its own row
        expect(bar).to_have_attribute("data-state", "running")
        expect(bar).to_have_attribute("data-live", "true")
    early = box(a)["width"]
    time.sleep(0.3)
    assert box(a)["width"] > early  # drawn live: the bar grows while the call runs
    page.locator(".timeline").last.screenshot(path=str(SHOTS / "timeline_live.png"))

    expect(a).to_have_attribute("data-state", "complete")
    expect(b).to_have_attribute("data-state", "complete")
    ready(page)
    first, second = box(a), box(b)
    assert abs(first["x"] - second["x"]) < 6  # started together ...
    assert first["y"] != second["y"]  # ... on rows of their own
    assert first["x"] < second["x"] + second["width"] and second["x"] < first["x"] + first["width"]
    model = bars(page, '.tl-track[data-kind="model"]')
    expect(model).to_have_count(2)  # the turn that called, the turn that answered
    expect(model.first).to_have_attribute("data-state", "model")
    # the calls ran after the model's first turn and before its second
    assert box(model.first)["x"] <= first["x"] <= box(model.last)["x"]
    run = bars(page, '.tl-track[data-kind="run"]')
    assert states(run) == ["waiting", "done"]  # the request on its way, then the run
    expect(page.locator(".timeline .tl-total").last).to_contain_text("2 model turns · 2 calls")
    labels = page.locator(".timeline").last.locator(".tl-label")
    expect(labels).to_have_text(["server", "model", "count_slowly", "count_slowly"])
    assert page.console_errors == []


def test_a_wait_for_approval_is_shown_while_it_lasts(page: Page) -> None:
    send(page, "save groceries")
    dialog = page.locator("#approval")
    expect(dialog).to_be_visible()
    save = call_bars(page, "call_save")
    expect(save.last).to_have_attribute("data-state", "awaiting-approval")
    expect(save.last).to_have_attribute("data-live", "true")
    run = bars(page, '.tl-track[data-kind="run"]')
    expect(run.last).to_have_attribute("data-state", "waiting")
    time.sleep(0.3)
    dialog.locator(".approve").click()
    ready(page)
    # the arguments, the wait, then the call in the run that resumed; the run row: the
    # request, the run, the wait, the run that resumed
    expect(save.last).to_have_attribute("data-state", "complete")
    assert states(save) == ["streaming", "awaiting-approval", "complete"]
    assert states(run) == ["waiting", "done", "waiting", "done"]
    assert box(run.nth(2))["width"] > box(run.nth(1))["width"]  # a human is slower than a run
    assert run.nth(2).get_attribute("title").startswith("waiting for your approval")
    assert page.console_errors == []


def test_browser_waits_errors_and_a_stop(page: Page) -> None:
    send(page, "please confirm")
    expect(page.locator("#confirm")).to_be_visible()
    confirm = call_bars(page, "call_confirm")
    expect(confirm.last).to_have_attribute("data-state", "in-browser")
    expect(confirm.last).to_have_attribute("data-live", "true")
    page.locator("#confirm .yes").click()
    ready(page)
    expect(confirm.last).to_have_attribute("data-state", "complete")
    run = bars(page, '.tl-track[data-kind="run"]')
    assert states(run) == ["waiting", "done", "waiting", "done"]
    assert run.nth(2).get_attribute("title").startswith("running browser tools")

    send(page, "divide by zero")
    ready(page)
    expect(call_bars(page, "call_divide").last).to_have_attribute("data-state", "error")

    send(page, "crash")
    expect(page.locator("#status")).to_have_text("run failed")
    expect(bars(page, '.tl-track[data-kind="run"]').last).to_have_attribute("data-state", "error")

    send(page, "a long task")
    task = call_bars(page, "call_long")
    expect(task.last).to_have_attribute("data-state", "running")
    page.click("#stop")
    expect(task.last).to_have_attribute("data-state", "cancelled")
    expect(task.last).to_have_attribute("data-live", "false")
    expect(page.locator(".timeline")).to_have_count(4)  # one per turn
    assert page.console_errors == []


def test_a_delegate_has_rows_under_the_call_that_delegated(page: Page) -> None:
    send(page, "research my trip")
    ready(page)
    timeline = page.locator(".timeline").last
    expect(timeline.locator(".tl-label")).to_have_text(
        ["server", "model", "summarize", "summarizer · model", "current_time"]
    )
    sub_call = call_bars(page, "call_sub_time").last
    expect(sub_call).to_have_attribute("data-state", "complete")
    parent = call_bars(page, "call_research").last
    # the sub-agent's call ran inside the delegating call's time
    outer, inner = box(parent), box(sub_call)
    assert (
        outer["x"] <= inner["x"] and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 2
    )
    indent = timeline.locator(".tl-label").nth(4).evaluate("e => getComputedStyle(e).paddingLeft")
    assert indent == "18px"
    assert page.console_errors == []
