"""The starter front ends (examples/react-*) built with npm, served by their own
``server.py`` with a scripted agent, and driven in Debian's headless Chromium.

``make test`` runs ``npm ci`` and ``npm run build`` in each app first. What a page
showed during a run is read from a MutationObserver log (``SEEN``) installed before the
app's script runs: every state a tool card passed through and every text it showed, so
a test asserts that arguments streamed and progress moved without sampling the screen
at a lucky moment. ``STARTER_SCREENSHOTS=1`` saves each app's approval screenshot
under docs/images/.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance import conformance_check  # noqa: F401  (checks the module's streams)
from live_server import Server

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
IMAGES = ROOT / "docs" / "images"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [  # as tests/playground/conftest.py
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

SEEN = """
window.__seen = [];
const note = (card, what, value) => window.__seen.push({
  tool: card.dataset.tool ?? null, call: card.dataset.toolCallId ?? null, what, value,
});
new MutationObserver((records) => {
  for (const record of records) {
    const text = record.target.nodeType === Node.TEXT_NODE;
    const target = text ? record.target.parentElement : record.target;
    const card = target?.closest?.(".card");
    if (!card) {
      for (const node of record.addedNodes) {
        if (node.nodeType !== Node.ELEMENT_NODE) continue;
        for (const c of [node, ...node.querySelectorAll(".card")]) {
          if (c.matches(".card")) note(c, "state", c.dataset.state);
        }
      }
      continue;
    }
    if (record.type === "attributes" && record.attributeName === "data-state") {
      note(card, "state", card.dataset.state);
    } else if (record.type !== "attributes") {
      for (const el of card.querySelectorAll(".args, .progress-text, .partial")) {
        note(card, el.className, el.textContent);
      }
    }
  }
}).observe(document, {
  childList: true, subtree: true, characterData: true,
  attributes: true, attributeFilter: ["data-state"],
});
"""


def load(path: Path, name: str) -> Any:
    """A Python file by path (neither tests nor examples are packages)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


scripted = load(Path(__file__).with_name("agent.py"), "starter_test_agent")


class Starters:
    """The helpers the tests of both apps share (tests are not a package: they get
    them from the ``starters`` fixture)."""

    agent = scripted
    """tests/examples/agent.py: its tools, script and ``RELEASE``."""

    @staticmethod
    def serve(app: str, tmp: Path, *, journal: bool = False) -> tuple[Server, Any]:
        """The app's ``server.py`` serving its build and a fresh scripted agent, and the
        agent's scripted model."""
        folder = EXAMPLES / app
        if not (folder / "dist" / "index.html").exists():
            pytest.fail(f"{app} is not built: run `make test` (it runs npm ci and npm run build)")
        server_module = load(folder / "server.py", f"starter_server_{app.replace('-', '_')}")
        from callwright.store import SQLiteJournal

        agent, model = scripted.make_agent()
        runs = SQLiteJournal(str(tmp / "runs.db")) if journal else None
        return Server(server_module.create_app(agent, journal=runs)), model

    @staticmethod
    def open_page(browser: Any, url: str) -> Any:
        """A fresh page on ``url`` recording what it shows; its console errors are kept in
        ``page.console_errors``."""
        context = browser.new_context(viewport={"width": 900, "height": 760})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.console_errors = errors
        page.add_init_script(SEEN)
        page.goto(url)
        return page

    @staticmethod
    def send(page: Any, text: str) -> None:
        """Types ``text`` into the composer and sends it, as a user would."""
        page.get_by_label("Message").fill(text)
        page.get_by_role("button", name="Send").click()

    @staticmethod
    def seen(page: Any, tool: str, what: str) -> list[str]:
        """What the cards of ``tool`` showed as ``what`` (``state``, ``args``,
        ``progress-text``, ``partial``), in order, without repeats in a row."""
        entries: list[dict[str, Any]] = page.evaluate("window.__seen")
        values: list[str] = []
        for e in entries:
            if e["tool"] == tool and e["what"] == what and (not values or values[-1] != e["value"]):
                values.append(e["value"])
        return values

    @staticmethod
    def screenshot(page: Any, name: str) -> None:
        """Saves the approval screenshot the docs show, when asked to."""
        if os.environ.get("STARTER_SCREENSHOTS") == "1":
            IMAGES.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(IMAGES / name))


@pytest.fixture(scope="session")
def starters() -> type[Starters]:
    return Starters


# Module scope: sync Playwright holds an event loop in this thread while it is open.
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
def page(browser: Any, starters: Any, served: tuple[Any, Any]) -> Iterator[Any]:
    """A fresh page on the module's ``served`` starter; it must end with no console error."""
    page = starters.open_page(browser, served[0].url + "/")
    yield page
    assert page.console_errors == []
    page.context.close()
