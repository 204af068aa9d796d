"""The playground on the embedded default model, as ``make run`` serves it: real Chromium,
the real demo agent, SmolLM2 choosing its tools itself (nothing forced). The page also
offers its browser tools (``confirmAction``, ``user_locale``), so the model chooses among
eight tools here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from callwright.demo import demo_agent
from callwright.models.local import LocalModel
from callwright.server import create_app
from live_server import Server

SLOW = 120_000  # ms: the model runs on 2 cores shared with other test suites


@pytest.fixture(scope="module")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    sandbox = tmp_path_factory.mktemp("local-sandbox")
    (sandbox / "notes.txt").write_text("hello notes")
    with Server(create_app(demo_agent(LocalModel(), sandbox=sandbox))) as running:
        running.sandbox = sandbox
        yield running


@pytest.fixture
def local_page(browser: Any, local_server: Server) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 820})
    page = context.new_page()
    page.goto(local_server.url + "/")
    yield page
    context.close()


def send(page: Page, text: str) -> None:
    page.fill("#input", text)
    page.press("#input", "Enter")


def ready(page: Page) -> None:
    expect(page.locator("#send")).to_be_enabled(timeout=SLOW)
    expect(page.locator("#status")).to_have_text("ready")


def test_a_calculation_is_called_shown_and_answered(local_page: Page) -> None:
    send(local_page, "What is 17 * 23?")
    calc = local_page.locator(".card").first
    expect(calc.locator(".name")).to_have_text("calculate", timeout=SLOW)
    expect(calc).to_have_attribute("data-state", "complete", timeout=SLOW)
    expect(calc.locator(".result pre")).to_have_text("391")
    ready(local_page)
    expect(local_page.locator(".msg.assistant").last).to_contain_text("391")
    expect(local_page.locator(".card")).to_have_count(1)


def test_reading_a_file_shows_its_text(local_page: Page) -> None:
    send(local_page, "Read the file notes.txt")
    read = local_page.locator(".card").first
    expect(read.locator(".name")).to_have_text("read_file", timeout=SLOW)
    expect(read).to_have_attribute("data-state", "complete", timeout=SLOW)
    expect(read.locator(".result pre")).to_have_text("hello notes")
    ready(local_page)


def test_a_greeting_gets_words_and_no_tool(local_page: Page) -> None:
    send(local_page, "Hello!")
    ready(local_page)
    expect(local_page.locator(".msg.assistant").last).not_to_be_empty()
    expect(local_page.locator(".card")).to_have_count(0)
    expect(local_page.locator("#approval")).to_be_hidden()


def test_a_write_asks_for_approval_with_the_users_words(
    local_page: Page, local_server: Server
) -> None:
    send(local_page, "Save 'Buy milk' in shopping.txt")
    dialog = local_page.locator("#approval")
    expect(dialog).to_be_visible(timeout=SLOW)
    expect(dialog.locator(".tool")).to_have_text("write_file")
    expect(dialog.locator(".args")).to_contain_text('"path": "shopping.txt"')
    expect(dialog.locator(".args")).to_contain_text('"content": "Buy milk"')
    dialog.locator(".deny").click()
    ready(local_page)
    assert not (Path(local_server.sandbox) / "shopping.txt").exists()
