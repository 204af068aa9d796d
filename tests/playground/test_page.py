"""The playground page end to end: real Chromium, the real @ag-ui/client bundle, the real
server, a scripted model.

What the page showed *during* a run is read from a MutationObserver log (``HISTORY``)
installed before the page's own script runs: every text the page put into the log,
in order, with the element and tool call it went into. So a test asserts that text
streamed and progress moved without ever sampling the screen at a lucky moment.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
    "2mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

HISTORY = """
window.__history = [];
new MutationObserver((records) => {
  for (const record of records) {
    for (const node of record.addedNodes) {
      if (node.nodeType !== Node.TEXT_NODE) continue;
      const target = record.target;
      window.__history.push({
        where: target.className || target.tagName.toLowerCase(),
        call: target.closest?.(".card")?.dataset.toolCallId ?? null,
        text: node.data,
      });
    }
  }
}).observe(document, { childList: true, subtree: true });
"""


@pytest.fixture
def page(page: Page) -> Page:
    page.add_init_script(HISTORY)
    page.reload()
    return page


def history(page: Page, where: str, call: str | None = None) -> list[str]:
    """The texts the page showed in elements of class ``where`` (of one call's card)."""
    entries: list[dict[str, Any]] = page.evaluate("window.__history")
    return [
        e["text"] for e in entries if e["where"] == where and (call is None or e["call"] == call)
    ]


def send(page: Page, text: str) -> None:
    page.fill("#input", text)
    page.press("#input", "Enter")


def card(page: Page, call_id: str) -> Any:
    return page.locator(f'.card[data-tool-call-id="{call_id}"]')


def last_answer(page: Page) -> Any:
    return page.locator(".msg.assistant").last


def ready(page: Page) -> None:
    expect(page.locator("#status")).to_have_text("ready")
    expect(page.locator("#send")).to_be_enabled()


def test_a_message_gets_a_streamed_answer(page: Page) -> None:
    send(page, "hello")
    expect(page.locator(".msg.user")).to_have_text("hello")
    answer = "Hello! I am a scripted model and I stream my answer word by word."
    expect(last_answer(page)).to_have_text(answer)
    ready(page)
    shown = history(page, "msg assistant")
    assert shown[-1] == answer
    assert len(shown) == len(answer.split())  # one update per streamed word
    assert all(answer.startswith(text) for text in shown)
    assert page.console_errors == []


def test_reasoning_is_shown_apart_from_the_answer(page: Page) -> None:
    send(page, "ponder this")
    expect(page.locator(".msg.reasoning")).to_have_text("The user wants me to think first.")
    expect(last_answer(page)).to_have_text("I thought about it.")
    ready(page)


def test_server_tool_card_shows_arguments_progress_and_result(page: Page) -> None:
    send(page, "count to 3")
    count = card(page, "call_count")
    expect(count.locator(".name")).to_have_text("count_slowly")
    expect(count.locator(".where")).to_have_text("server tool")
    expect(count).to_have_attribute("data-state", "complete")
    expect(count.locator(".result pre")).to_have_text("counted to 3")
    expect(count.locator(".bar > div")).to_have_attribute("style", "width: 100%;")
    expect(last_answer(page)).to_have_text("Done: count_slowly=counted to 3")
    ready(page)
    # the arguments streamed in two pieces before they were shown complete
    assert history(page, "args", "call_count") == ['{"n"', '{"n": 3}', '{\n  "n": 3\n}']
    # progress moved while the call ran, one report at a time
    assert history(page, "progress-text", "call_count") == [
        "1 of 3 · 33%",
        "2 of 3 · 67%",
        "3 of 3 · 100%",
    ]
    assert history(page, "state", "call_count") == ["streaming arguments", "running", "complete"]
    assert page.console_errors == []


def test_partial_outputs_are_shown_as_they_come(page: Page) -> None:
    send(page, "deploy please")
    deploy = card(page, "call_deploy")
    expect(deploy).to_have_attribute("data-state", "complete")
    expect(deploy.locator(".progress-text")).to_have_text("stage 3 of 3 · 100%")
    result = json.loads(deploy.locator(".result pre").inner_text())
    assert result == {"env": "staging", "status": "deployed"}
    partials = [json.loads(text) for text in history(page, "partial-output", "call_deploy")]
    assert partials == [{"env": "staging", "stage": stage} for stage in (1, 2, 3)]
    expect(deploy.locator(".partial pre")).to_have_text(pretty({"env": "staging", "stage": 3}))
    ready(page)
    assert page.console_errors == []


def test_a_tools_image_is_shown_in_its_card(page: Page) -> None:
    send(page, "chart please")
    chart = card(page, "call_chart")
    expect(chart).to_have_attribute("data-state", "complete")
    expect(chart.locator(".result pre")).to_have_text("Here is the chart\n[image/png chart.png]")
    image = chart.locator("img.tool-file")
    expect(image).to_have_attribute("alt", "chart.png")
    assert image.get_attribute("src") == f"data:image/png;base64,{PNG}"
    assert image.evaluate("img => img.complete && img.naturalWidth") == 1  # it decoded
    expect(last_answer(page)).to_have_text("Done: chart=Here is the chart")
    ready(page)
    assert page.console_errors == []


def test_a_failing_call_shows_its_error(page: Page) -> None:
    send(page, "divide by zero")
    divide = card(page, "call_divide")
    expect(divide).to_have_attribute("data-state", "error")
    expect(divide.locator(".result .label")).to_have_text("Error")
    expect(divide.locator(".result pre")).to_have_text("division by zero")
    expect(last_answer(page)).to_have_text("Done: calculate=division by zero (error)")
    ready(page)
    assert page.console_errors == []


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2)


def test_progress_text_without_a_fraction_and_the_stop_button(
    page: Page, cancelled: list[str]
) -> None:
    cancelled.clear()
    send(page, "a long task")
    task = card(page, "call_long")
    expect(task.locator(".progress-text")).to_contain_text("working, step")
    expect(task.locator(".bar")).to_be_hidden()  # no fraction reported: text only
    page.click("#stop")
    expect(task).to_have_attribute("data-state", "cancelled")
    expect(page.locator(".notice.info")).to_contain_text("Stopped")
    expect(page.locator(".notice.error")).to_have_count(0)  # a stop is not a failure
    expect(page.locator("#stop")).to_be_hidden()
    deadline = time.monotonic() + 10
    while "call_long" not in cancelled:  # the server's run saw the request go and cancelled
        assert time.monotonic() < deadline, "the server did not cancel the tool"
        time.sleep(0.05)
    assert task.locator(".result").is_hidden()
    # the conversation carries on after the stop
    send(page, "hello")
    expect(last_answer(page)).to_contain_text("Hello!")
    ready(page)


def test_a_cards_stop_button_stops_that_call_and_the_run_goes_on(
    page: Page, cancelled: list[str]
) -> None:
    send(page, "stopone please")
    task = card(page, "call_long_one")
    expect(task.locator(".progress-text")).to_contain_text("working, step")
    expect(card(page, "call_deploy_one")).to_have_attribute("data-state", "complete")
    expect(card(page, "call_deploy_one").locator(".stop-call")).to_be_hidden()
    task.locator(".stop-call").click()
    expect(task).to_have_attribute("data-state", "error")
    expect(task.locator(".result pre")).to_have_text("Cancelled: cancelled by the user")
    expect(task.locator(".stop-call")).to_be_hidden()
    assert "call_long_one" in cancelled  # the tool saw its token before its result came
    expect(last_answer(page)).to_have_text(
        "Done: long_task=Cancelled: cancelled by the user (error); "
        'deploy={"env":"staging","status":"deployed"}'
    )
    expect(page.locator(".notice.error")).to_have_count(0)
    ready(page)


def test_approve_a_call_and_see_its_result(page: Page, sandbox: Path) -> None:
    send(page, "save groceries")
    dialog = page.locator("#approval")
    expect(dialog).to_be_visible()
    expect(dialog.locator(".tool")).to_have_text("write_file")
    expect(dialog.locator(".why")).to_contain_text("You asked me to keep your list.")
    args = json.loads(dialog.locator(".args").inner_text())
    assert args["path"] == "groceries.txt" and args["content"] == "Buy milk"
    save = card(page, "call_save")
    expect(save).to_have_attribute("data-state", "awaiting-approval")
    expect(page.locator("#status")).to_have_text("waiting for your approval")
    page.screenshot(path=str(_shots() / "approval_dialog.png"))
    assert not (sandbox / "groceries.txt").exists()
    dialog.locator(".approve").click()
    expect(dialog).to_be_hidden()
    expect(save).to_have_attribute("data-state", "complete")
    expect(save.locator(".result pre")).to_have_text("wrote 8 characters to groceries.txt")
    expect(last_answer(page)).to_have_text("Done: write_file=wrote 8 characters to groceries.txt")
    ready(page)
    assert (sandbox / "groceries.txt").read_text() == "Buy milk"
    assert page.console_errors == []


def test_deny_a_call_with_a_reason(page: Page, sandbox: Path) -> None:
    send(page, "save secrets")
    dialog = page.locator("#approval")
    expect(dialog).to_be_visible()
    dialog.locator("#deny-reason").fill("not in this folder")
    dialog.locator(".deny").click()
    save = card(page, "call_save")
    expect(save).to_have_attribute("data-state", "denied")
    expect(save.locator(".result .label")).to_have_text("Denied")
    expect(save.locator(".result pre")).to_contain_text("not in this folder")
    expect(last_answer(page)).to_have_text(
        "Done: write_file=Tool call denied: not in this folder (error)"
    )
    ready(page)
    assert not (sandbox / "secrets.txt").exists()
    assert page.console_errors == []


def test_two_approvals_are_asked_one_after_the_other(page: Page, sandbox: Path) -> None:
    send(page, "save both")
    dialog = page.locator("#approval")
    expect(dialog.locator(".args")).to_contain_text('"path": "a.txt"')
    dialog.locator(".approve").click()
    expect(dialog.locator(".args")).to_contain_text('"path": "b.txt"')
    expect(card(page, "call_save_b")).to_have_attribute("data-state", "awaiting-approval")
    dialog.locator(".deny").click()
    expect(card(page, "call_save_a")).to_have_attribute("data-state", "complete")
    expect(card(page, "call_save_b")).to_have_attribute("data-state", "denied")
    expect(last_answer(page)).to_have_text(
        "Done: write_file=wrote 1 characters to a.txt; write_file=Tool call denied. (error)"
    )
    ready(page)
    assert (sandbox / "a.txt").read_text() == "A" and not (sandbox / "b.txt").exists()
    assert page.console_errors == []


def test_new_chat_starts_over(page: Page) -> None:
    send(page, "remember this")
    expect(last_answer(page)).to_have_text("Done: calculate=42")
    page.click("#new-chat")
    expect(page.locator(".card")).to_have_count(0)
    expect(page.locator(".msg")).to_have_count(0)
    expect(page.locator("#state")).to_have_text("{}")
    send(page, "hello")
    expect(last_answer(page)).to_contain_text("Hello!")
    expect(page.locator(".msg")).to_have_count(2)
    ready(page)


def test_front_end_tool_confirm_action_is_answered_in_the_page(page: Page) -> None:
    send(page, "please confirm")
    dialog = page.locator("#confirm")
    expect(dialog).to_be_visible()
    expect(dialog.locator(".action")).to_have_text("Delete 3 old files")
    expect(dialog.locator(".importance")).to_have_text("high")
    confirm = card(page, "call_confirm")
    expect(confirm.locator(".where")).to_have_text("browser tool")
    expect(confirm).to_have_attribute("data-state", "in-browser")
    page.screenshot(path=str(_shots() / "confirm_dialog.png"))
    dialog.locator(".no").click()
    expect(confirm).to_have_attribute("data-state", "complete")
    expect(last_answer(page)).to_have_text('Done: confirmAction={"confirmed":false}')
    ready(page)
    assert page.console_errors == []


def test_browser_tool_mixed_with_a_server_tool(page: Page) -> None:
    send(page, "where am I")
    server_side, browser_side = card(page, "call_utc"), card(page, "call_browser")
    expect(browser_side).to_have_attribute("data-state", "complete")
    expect(server_side).to_have_attribute("data-state", "complete")
    expect(server_side.locator(".result pre")).to_contain_text("(UTC,")
    result = json.loads(browser_side.locator(".result pre").inner_text())
    # the context runs in Tokyo with a Japanese locale: only the browser knew that
    assert result["timeZone"] == "Asia/Tokyo" and result["locale"] == "ja-JP"
    answer = last_answer(page)
    expect(answer).to_contain_text("current_time=")
    expect(answer).to_contain_text('user_locale={"timeZone":"Asia/Tokyo","locale":"ja-JP"')
    ready(page)
    assert page.console_errors == []


def test_a_sub_agent_works_inside_its_parent_call(page: Page) -> None:
    send(page, "research my trip")
    parent = card(page, "call_research")
    expect(parent).to_have_attribute("data-state", "complete")
    sub = parent.locator(".sub")
    expect(sub.locator(".label").first).to_have_text("sub-agent summarizer")
    inner = sub.locator('.card[data-tool-call-id="call_sub_time"]')
    expect(inner.locator(".name")).to_have_text("current_time")
    expect(inner.locator(".result pre")).to_contain_text("(Europe/Paris,")
    expect(sub.locator(".msg.assistant")).to_have_text("Summary: a warm trip.")
    expect(parent.locator(".result pre").last).to_have_text("Summary: a warm trip.")
    expect(last_answer(page)).to_have_text("Done: summarize=Summary: a warm trip.")
    ready(page)
    assert page.console_errors == []


def test_the_state_panel_follows_the_run_state(page: Page) -> None:
    send(page, "remember this")
    expect(page.locator("#state")).to_have_text('{\n  "answer": "42"\n}')
    expect(page.locator("#changes li").first).to_have_text('add /answer "42"')
    expect(last_answer(page)).to_have_text("Done: calculate=42")
    ready(page)
    assert page.console_errors == []


def test_a_run_error_is_shown(page: Page) -> None:
    send(page, "crash")
    expect(page.locator(".notice.error")).to_have_text(
        "The run failed: the model provider failed (model_error)"
    )
    expect(page.locator("#status")).to_have_text("run failed")
    expect(page.locator("#send")).to_be_enabled()


def test_a_refused_connection_is_shown_and_can_be_retried(page: Page) -> None:
    page.route("**/agui", lambda route: route.abort("connectionreset"))
    send(page, "hello")
    failure = page.locator(".notice.error")
    expect(failure).to_contain_text("Connection lost")
    expect(page.locator("#status")).to_have_text("connection lost")
    page.unroute("**/agui")
    failure.locator("button", has_text="Retry").click()
    expect(last_answer(page)).to_contain_text("Hello! I am a scripted model")
    ready(page)


def test_a_stream_cut_mid_run_is_shown(page: Page) -> None:
    def cut(route: Any) -> None:
        response = route.fetch()
        frames = response.text().split("\n\n")
        # keep the run's start and its first two words, drop the rest (RUN_FINISHED too)
        words = [i for i, f in enumerate(frames) if "TEXT_MESSAGE_CONTENT" in f]
        route.fulfill(response=response, body="\n\n".join(frames[: words[1] + 1]) + "\n\n")

    page.route("**/agui", cut)
    send(page, "hello")
    expect(page.locator(".notice.error")).to_contain_text(
        "Connection lost: the stream ended before the run finished"
    )
    expect(last_answer(page)).to_have_text("Hello! I ")
    expect(page.locator("#status")).to_have_text("connection lost")


def _shots() -> Path:
    folder = Path(__file__).resolve().parents[2] / "build" / "playground"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
