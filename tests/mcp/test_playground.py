"""The playground answers an MCP server's question (elicitation) with a form made from its
schema, in real headless Chromium (Debian's, as tests/playground uses)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from callwright import Agent
from callwright.mcp import MCPServer
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from live_server import Server

CHROMIUM = Path("/usr/bin/chromium")
ASK = "trigger-elicitation-request"


def script(request: ModelRequest) -> list[Any]:
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    results = [m for m in messages[last_user + 1 :] if isinstance(m, ToolResultMessage)]
    if results:
        return ["Done."]
    return [call(ASK, {}, id=f"call_ask_{uuid.uuid4().hex[:6]}")]


@pytest.fixture(scope="module")
def server(everything_command: list[str]) -> Iterator[Server]:
    everything = MCPServer.stdio(everything_command[0], everything_command[1:], name="everything")
    with Server(create_app(Agent(ScriptedModel(script), toolsets=[everything]))) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make test` (it installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=args)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(server.url + "/")
    yield page
    context.close()
    assert errors == []


def ask(page: Page) -> Any:
    page.fill("#input", "ask me")
    page.press("#input", "Enter")
    dialog = page.locator("dialog.input-request")
    expect(dialog).to_be_visible()
    expect(page.locator("#status")).to_have_text("waiting for your answer")
    return dialog


def result_of(page: Page) -> Any:
    return page.locator(".card .result pre").last


def test_the_form_is_made_from_the_schema_and_its_answer_resumes_the_call(page: Page) -> None:
    dialog = ask(page)
    expect(dialog.locator(".why").first).to_have_text(
        "Please provide inputs for the following fields:"
    )
    expect(dialog.locator("label", has_text="String *")).to_be_visible()  # name, required
    expect(dialog.locator("input[type=email]")).to_have_count(1)
    expect(dialog.locator("input[type=date]")).to_have_count(1)
    expect(dialog.locator("input[type=checkbox]")).to_have_count(1)
    expect(dialog.locator("select[multiple]")).to_have_count(2)
    expect(dialog.locator("input[name=integer]")).to_have_value("42")
    dialog.locator("input[name=name]").fill("Grace Hopper")
    dialog.locator("input[name=check]").check()
    dialog.locator(".submit").click()
    expect(dialog).to_have_count(0)
    expect(result_of(page)).to_contain_text("- Name: Grace Hopper")
    expect(result_of(page)).to_contain_text("- Agreed to terms: true")
    expect(page.locator(".msg.assistant").last).to_have_text("Done.")


def test_declining_is_passed_back_to_the_server(page: Page) -> None:
    dialog = ask(page)
    dialog.locator(".decline").click()
    expect(result_of(page)).to_contain_text("declined")
    expect(page.locator(".msg.assistant").last).to_have_text("Done.")
