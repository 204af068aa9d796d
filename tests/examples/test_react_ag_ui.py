"""examples/react-ag-ui: @ag-ui/client's HttpAgent against callwright's AG-UI endpoint,
in real Chromium, served by the example's own server.py."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from callwright.messages import UserMessage

APP = "react-ag-ui"
# a 1x1 PNG
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


@pytest.fixture(scope="module")
def served(starters: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    server, model = starters.serve(APP, tmp_path_factory.mktemp(APP))
    with server:
        yield server, model


def test_a_tool_card_streams_its_arguments_then_shows_progress_and_partial_outputs(
    page: Any, starters: Any
) -> None:
    seen = starters.seen
    starters.send(page, "deploy to staging")
    card = page.locator(".card[data-tool=deploy]")
    expect(card).to_have_attribute("data-state", "output-available", timeout=15_000)
    expect(card.locator(".result")).to_contain_text('"status": "deployed"')
    expect(page.locator(".message.assistant").last).to_contain_text(
        'Done: deploy={"env":"staging","status":"deployed"}'
    )
    states = seen(page, "deploy", "state")
    # running ("input-available") may share a render with the first progress report
    assert states[0] == "input-streaming"
    assert states[-2:] == ["partial-output", "output-available"]
    arguments = seen(page, "deploy", "args")
    assert len(arguments) >= 2 and '"staging"' in arguments[-1]  # shown as it grew
    assert [t for t in seen(page, "deploy", "progress-text") if t] == [
        "stage 1 of 3",
        "stage 2 of 3",
        "stage 3 of 3",
    ]
    assert '"stage": 3' in seen(page, "deploy", "partial")[-1]


def test_one_call_approved_and_one_denied_with_a_reason(page: Any, starters: Any) -> None:
    starters.send(page, "clean up")
    cards = page.locator(".card[data-tool=delete_file]")
    expect(cards.locator(".approval")).to_have_count(2, timeout=15_000)
    expect(cards.first).to_contain_text('"path": "a.txt"')
    expect(page.locator(".status")).to_have_text("awaiting approval")
    starters.screenshot(page, "starter-ag-ui-approval.png")
    cards.nth(0).get_by_role("button", name="Approve").click()
    expect(cards.nth(0)).to_contain_text("Approved")
    expect(cards.nth(0)).to_have_attribute("data-state", "approval-responded")
    cards.nth(1).get_by_label("Reason").fill("keep b for now")
    cards.nth(1).get_by_role("button", name="Deny").click()
    # both answered: the page resumes the run with both answers and the model answers
    expect(page.locator(".message.assistant").last).to_contain_text(
        "Done: delete_file=deleted a.txt; delete_file=Tool call denied: keep b for now (error)",
        timeout=15_000,
    )
    expect(cards.nth(0)).to_have_attribute("data-state", "output-available")
    expect(cards.nth(1)).to_have_attribute("data-state", "output-denied")
    expect(cards.nth(1)).to_contain_text("Tool call denied: keep b for now")


def test_the_page_runs_a_front_end_tool_itself(browser: Any, starters: Any, served: Any) -> None:
    context = browser.new_context(timezone_id="Asia/Tokyo", locale="ja-JP")
    page = context.new_page()
    page.goto(served[0].url + "/")
    starters.send(page, "where am I?")
    card = page.locator(".card[data-tool=user_locale]")
    expect(card).to_have_attribute("data-state", "output-available", timeout=15_000)
    expect(card).to_contain_text("Result (from your browser)")
    expect(page.locator(".message.assistant").last).to_contain_text(
        'Done: user_locale={"timeZone":"Asia/Tokyo","locale":"ja-JP"}', timeout=15_000
    )
    context.close()


def test_an_image_and_a_text_file_reach_the_model(
    page: Any, served: tuple[Any, Any], tmp_path: Path, starters: Any
) -> None:
    image, note = tmp_path / "dot.png", tmp_path / "note.txt"
    image.write_bytes(PIXEL)
    note.write_text("buy milk")
    page.get_by_label("Attach files").set_input_files([str(image), str(note)])
    starters.send(page, "what are these?")
    expect(page.locator(".message.user img.file")).to_have_attribute("alt", "dot.png")
    expect(page.locator(".message.assistant").last).to_contain_text(
        "I received 2 file(s): dot.png (image/png), note.txt (text/plain).", timeout=15_000
    )
    model = served[1]
    user = [m for m in model.requests[-1].messages if isinstance(m, UserMessage)][-1]
    assert [(f.filename, f.media_type, base64.b64decode(f.data or "")) for f in user.files] == [
        ("dot.png", "image/png", PIXEL),
        ("note.txt", "text/plain", b"buy milk"),
    ]


def test_a_failing_tool_ends_its_card_in_error_and_the_model_sees_why(
    page: Any, starters: Any
) -> None:
    starters.send(page, "check the disk")
    card = page.locator(".card[data-tool=check_disk]")
    expect(card).to_have_attribute("data-state", "output-error", timeout=15_000)
    expect(card.locator(".result.error")).to_contain_text("the disk is full")
    expect(page.locator(".message.assistant").last).to_contain_text(
        "Done: check_disk=", timeout=15_000
    )
    expect(page.locator(".message.assistant").last).to_contain_text("the disk is full (error)")


def test_a_file_the_server_cannot_use_is_skipped_and_the_model_told(
    page: Any, tmp_path: Path, starters: Any
) -> None:
    """AG-UI's run-input rules: a part the server cannot use does not fail the run."""
    table = tmp_path / "table.csv"
    table.write_text("a,b\n1,2\n")
    page.get_by_label("Attach files").set_input_files(str(table))
    starters.send(page, "read this")
    expect(page.locator(".message.assistant").last).to_contain_text(
        "was not passed on: media type 'text/csv' is not accepted", timeout=15_000
    )
    expect(page.locator(".error")).to_have_count(0)
