"""``callwright run`` as a person sees it: through a real pseudo-terminal (pexpect), and
with no terminal at all. The agent is the scripted one of ``agent.py``, loaded with
``--agent``; its file tools work in a temporary sandbox."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pexpect
import pytest

AGENT = f"{Path(__file__).with_name('agent.py')}:cli_agent"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def env(sandbox: Path) -> dict[str, str]:
    return {**os.environ, "CALLWRIGHT_SANDBOX": str(sandbox), "COLUMNS": "200"}


def spawn(prompt: str, sandbox: Path, *extra: str) -> pexpect.spawn:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "callwright.cli", "run", prompt, "--agent", AGENT, *extra],
        env=env(sandbox),
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 200),
    )
    return child


def transcript(child: pexpect.spawn) -> str:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return ANSI.sub("", child.before or "")


def run_without_terminal(prompt: str, sandbox: Path, *extra: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "callwright.cli", "run", prompt, "--agent", AGENT, *extra],
        capture_output=True,
        text=True,
        timeout=60,
        env=env(sandbox),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    return tmp_path


def test_the_approval_prompt_shows_the_call_and_approves(sandbox: Path) -> None:
    child = spawn("save groceries", sandbox)
    child.expect(r"Approve\? \[y/n\] ")
    shown = ANSI.sub("", child.before)  # what the terminal showed before the question
    assert "write_file needs your approval" in shown
    assert "reason: You asked me to keep your list." in shown
    assert '"path": "groceries.txt"' in shown and '"content": "Buy milk"' in shown
    assert not (sandbox / "groceries.txt").exists()  # nothing ran before the answer
    child.sendline("maybe")
    child.expect("Please answer y or n.")
    child.expect(r"Approve\? \[y/n\] ")
    child.sendline("y")
    out = transcript(child)
    assert "← write_file wrote 8 characters to groceries.txt" in out
    assert "Done: write_file=wrote 8 characters to groceries.txt" in out
    assert (sandbox / "groceries.txt").read_text() == "Buy milk"


def test_the_approval_prompt_denies_with_the_users_reason(sandbox: Path) -> None:
    child = spawn("save groceries", sandbox)
    child.expect(r"Approve\? \[y/n\] ")
    child.sendline("n")
    child.expect(r"Reason for the agent \(optional\): ")
    child.sendline("keep it in your head")
    out = transcript(child)
    assert "← write_file denied: Tool call denied: keep it in your head" in out
    assert "Done: write_file=Tool call denied: keep it in your head (error)" in out
    assert not (sandbox / "groceries.txt").exists()


def test_progress_bars_in_a_terminal(sandbox: Path) -> None:
    child = spawn("count to 3", sandbox)
    out = transcript(child)
    assert re.search(r"count_slowly ━+ 100% 3 of 3", out)  # rich's bar, finished
    assert "← count_slowly counted to 3" in out
    assert "Done: count_slowly=counted to 3" in out


def test_ctrl_c_stops_the_running_call_and_the_run_goes_on(sandbox: Path) -> None:
    child = spawn("stopone please", sandbox)
    child.expect("← deploy")
    child.expect("long_task: working, step")
    child.sendintr()
    child.expect("stopping the most recent call")
    out = transcript(child)
    assert "← long_task error: Cancelled: cancelled by the user" in out
    assert "Done: long_task=Cancelled: cancelled by the user (error); deploy=" in out


def test_yes_approves_without_asking(sandbox: Path) -> None:
    out = run_without_terminal("save groceries", sandbox, "--yes")
    assert "approved write_file" in out and "(--yes)" in out
    assert "Approve?" not in out
    assert "Done: write_file=wrote 8 characters to groceries.txt" in out
    assert (sandbox / "groceries.txt").read_text() == "Buy milk"


def test_without_a_terminal_the_call_is_denied_and_the_model_is_told_why(
    sandbox: Path,
) -> None:
    out = run_without_terminal("save groceries", sandbox)
    assert "denied write_file" in out and "no terminal to ask for approval" in out
    assert "pass --yes to approve" in out
    last = [line for line in out.splitlines() if line.strip()][-1]
    assert last.startswith("Done: write_file=Tool call denied: The user could not be asked")
    assert "no terminal" in last and last.endswith("(error)")
    assert not (sandbox / "groceries.txt").exists()


def test_reasoning_is_shown_before_the_answer_on_its_own_line(sandbox: Path) -> None:
    out = run_without_terminal("ponder this", sandbox)
    assert out.splitlines() == ["The user wants me to think first.", "I thought about it."]


def test_a_sub_agents_calls_are_shown_under_the_delegating_call(sandbox: Path) -> None:
    out = run_without_terminal("research my trip", sandbox)
    lines = out.splitlines()
    assert lines[0] == '→ summarize {"_delegate": "summarizer", "doc": "Paris trip"}'
    assert lines[1] == '  summarizer ↳ → current_time {"timezone": "Europe/Paris"}'
    assert lines[2].startswith("  summarizer ↳ ← current_time ") and "(Europe/Paris," in lines[2]
    assert lines[3:] == [
        "← summarize Summary: a warm trip.",
        "Done: summarize=Summary: a warm trip.",
    ]


def test_a_tools_files_are_named_after_its_text(sandbox: Path) -> None:
    out = run_without_terminal("chart please", sandbox)
    assert out.splitlines() == [
        "→ chart {}",
        "← chart Here is the chart [image/png chart.png]",
        "Done: chart=Here is the chart",
    ]


def test_tools_lists_an_agents_tools_with_their_schemas(sandbox: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "callwright.cli", "tools", "--agent", AGENT],
        capture_output=True,
        text=True,
        timeout=60,
        env=env(sandbox),
    )
    assert done.returncode == 0, done.stderr
    assert "long_task" in done.stdout and "write_file" in done.stdout
    assert "needs approval" in done.stdout and '"content"' in done.stdout


def test_serve_prints_the_playground_url_and_serves_the_page(sandbox: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "callwright.cli", "serve", "--port", str(port), "--agent", AGENT],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env(sandbox),
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("callwright agent on scripted")
        url = f"http://127.0.0.1:{port}/"
        assert proc.stdout.readline().strip() == f"playground: open {url} in a browser"
        deadline = time.monotonic() + 30
        while True:
            try:
                page = httpx.get(url)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.1)
        assert page.status_code == 200 and "<title>callwright playground</title>" in page.text
    finally:
        proc.terminate()
        proc.wait(timeout=10)
