"""A result stored as an artifact, in the playground: real Chromium, a real server behind a
token, a scripted model. The card shows the preview and a link; the link downloads the
whole result with the page's token (a plain link could not send it)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from callwright import Agent, tool
from callwright.artifacts import Artifacts, FileArtifactStore
from callwright.messages import ToolResultMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import bearer_token, create_app
from live_server import Server

TOKEN = "playground-0123456789abcdef"
LOG = "".join(f"line {i:06d} status=ok value={i * 7}\n" for i in range(40_000))


@tool
def big_log() -> str:
    """Returns a log of about 1.4 MB."""
    return LOG


def turn(request: ModelRequest) -> Any:
    if isinstance(request.messages[-1], ToolResultMessage):
        return ["Done."]
    return [call("big_log", {}, id="call_big")]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    store = FileArtifactStore(tmp_path_factory.mktemp("artifacts"))
    agent = Agent(ScriptedModel(turn), [big_log], artifacts=Artifacts(store=store))
    with Server(create_app(agent, authenticate=bearer_token(TOKEN))) as server:
        yield server


@pytest.fixture
def token_page(browser: Any, served: Server) -> Iterator[Page]:
    context = browser.new_context(accept_downloads=True, viewport={"width": 1200, "height": 820})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(served.url + f"/#token={TOKEN}")
    yield page
    assert errors == []
    context.close()


def test_an_artifacts_card_shows_its_preview_and_downloads_the_whole(
    token_page: Page, served: Server, tmp_path: Path
) -> None:
    token_page.fill("#input", "the log please")
    token_page.press("#input", "Enter")
    big = token_page.locator('.card[data-tool-call-id="call_big"]')
    expect(big).to_have_attribute("data-state", "complete")
    preview = big.locator(".result pre")
    expect(preview).to_contain_text("line 000000 status=ok value=0")  # its beginning
    expect(preview).to_contain_text("line 039999 status=ok value=279993")  # and its end
    assert len(preview.inner_text()) < 8_000
    link = big.locator("a.artifact-link")
    expect(link).to_have_text(f"Download the whole result ({len(LOG):,} bytes)")
    href = link.get_attribute("href")
    assert href is not None and "/runs/" in href and "/artifacts/art_" in href
    assert httpx.get(href).status_code == 401  # the link alone is not enough: it needs the token

    with token_page.expect_download() as started:
        link.click()
    download = started.value
    saved = tmp_path / "saved"
    download.save_as(saved)
    assert download.suggested_filename.startswith("art_")
    assert download.suggested_filename.endswith(".txt")
    data = saved.read_bytes()
    assert len(data) == len(LOG)
    assert hashlib.sha256(data).hexdigest() == hashlib.sha256(LOG.encode()).hexdigest()
