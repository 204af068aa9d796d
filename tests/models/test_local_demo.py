"""The embedded default model on the demo, unforced: a handful of fixed prompts answered
right end to end through ``callwright run``, and the prompts a newcomer types first
ending well (no file write nobody asked for)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from callwright.demo import demo_agent
from callwright.events import ApprovalRequested, ToolCallStart
from callwright.models.local import LocalModel


def run(prompt: str, sandbox: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "callwright.cli", "run", prompt, "--sandbox", str(sandbox)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("prompt", "call", "result"),
    [
        # "What is 17 * 23?" is tests/test_cli.py's
        (
            "What is the current time in Europe/Paris?",
            '→ current_time {"timezone": "Europe/Paris"}',
            "(Europe/Paris,",
        ),
        ("Read the file notes.txt", '→ read_file {"path": "notes.txt"}', "← read_file hello notes"),
        ("Count slowly to 2", '→ count_slowly {"n": 2}', "← count_slowly counted to 2"),
    ],
)
def test_callwright_run_calls_the_right_tool(
    tmp_path: Path, prompt: str, call: str, result: str
) -> None:
    (tmp_path / "notes.txt").write_text("hello notes")
    out = run(prompt, tmp_path)
    assert call in out
    assert result in out
    assert out.count("→ ") == 1  # one call, then the answer
    lines = [line for line in out.splitlines() if line.strip()]
    assert not lines[-1].startswith(("→", "←"))  # the run ends with an answer


def test_callwright_run_answers_small_talk_without_a_tool(tmp_path: Path) -> None:
    out = run("Hello!", tmp_path)
    assert "→" not in out and out.strip()


@pytest.mark.parametrize(
    "prompt",
    [
        "Print the contents of log.txt",
        "Nice to meet you",
        "What files do I have?",
        "Tell me a story about a file",
    ],
)
async def test_a_newcomers_prompt_never_asks_to_write_a_file(tmp_path: Path, prompt: str) -> None:
    agent = demo_agent(LocalModel(), sandbox=tmp_path)
    events = [e async for e in agent.stream(prompt)]
    assert not any(isinstance(e, ApprovalRequested) for e in events)
    names = [e.tool_name for e in events if isinstance(e, ToolCallStart)]
    assert "write_file" not in names
    assert events[-1].status == "completed"  # type: ignore[attr-defined]


async def test_a_write_that_was_asked_for_copies_the_users_words(tmp_path: Path) -> None:
    agent = demo_agent(LocalModel(), sandbox=tmp_path)
    events = [e async for e in agent.stream("Write 'see you soon' to bye.txt")]
    asked = [e for e in events if isinstance(e, ApprovalRequested)]
    assert [e.arguments for e in asked] == [{"path": "bye.txt", "content": "see you soon"}]
