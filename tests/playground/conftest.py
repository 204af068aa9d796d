"""The playground in real headless Chromium against a real callwright server.

The server runs the demo's tools (in a temporary sandbox) plus ``long_task``, on a
scripted model that picks its first turn from a keyword of the latest user message
and, once tool results are in, answers ``Done: tool=result; ...`` so a test can read
exactly what the model saw. Chromium is Debian's (``/usr/bin/chromium``, installed
by ``make test``); Playwright never downloads a browser here.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from callwright.server import create_app
from callwright.store import SQLiteJournal
from conformance import conformance_check  # noqa: F401  (checks the module's streams)
from live_server import Server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "playground"


def _load_agent_module() -> Any:
    """``agent.py`` next to this file (tests are not a package: loaded by path)."""
    path = Path(__file__).with_name("agent.py")
    spec = importlib.util.spec_from_file_location("playground_test_agent", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


scripted = _load_agent_module()
AGENT_FILE = Path(__file__).with_name("agent.py")


@pytest.fixture(scope="session", params=["memory", "journal"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """The server as ``create_app`` makes it, and with a run journal (``serve --journal``): the
    page must not be able to tell them apart."""
    folder = tmp_path_factory.mktemp(request.param)
    sandbox = folder / "sandbox"
    sandbox.mkdir()
    journal = SQLiteJournal(str(folder / "runs.db")) if request.param == "journal" else None
    with Server(create_app(scripted.make_agent(sandbox), journal=journal)) as running:
        running.sandbox = sandbox
        yield running


@pytest.fixture
def sandbox(server: Server) -> Path:
    """The folder the server's file tools work in."""
    return server.sandbox


# Module scope, not session: sync Playwright runs an event loop in this thread while it is
# open, and the async tests of later modules need the thread free of one.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make test` (it installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any, server: Server, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh page on the playground, in Tokyo with a Japanese locale (so a browser
    tool's answer can only have come from the browser); its console errors fail the test.
    A screenshot of the page as the test left it is saved under build/playground/."""
    context = browser.new_context(
        timezone_id="Asia/Tokyo", locale="ja-JP", viewport={"width": 1200, "height": 820}
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.console_errors = errors
    page.goto(server.url + "/")
    yield page
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{request.node.name}.png"), full_page=True)
    context.close()


@pytest.fixture
def cancelled() -> list[str]:
    return scripted.CANCELLED
