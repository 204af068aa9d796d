"""The demo agent's tools: real behaviour, through the agent loop where it matters."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from callwright import Agent, Decision
from callwright.call import InvalidArgs, ToolError
from callwright.demo import Sandbox, demo_tools, evaluate, make_count_slowly
from callwright.events import ApprovalRequested, RunFinished, ToolCallResult, ToolProgress
from callwright.models import ScriptedModel, call


def tools_by_name(folder: Path, step: float = 1.0) -> dict:
    return {t.name: t for t in demo_tools(Sandbox(folder), step_seconds=step)}


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("2 + 3 * 4", 14),
        ("(2 + 3) * 4", 20),
        ("2 ** 10", 1024),
        ("2 ^ 3", 8),
        ("7 // 2 + 7 % 2", 4),
        ("-3 + +1", -2),
        ("sqrt(16) + abs(-2)", 6.0),
        ("round(pi, 2)", 3.14),
        ("1 / 4", 0.25),
    ],
)
def test_calculate_does_arithmetic(expression: str, value: float) -> None:
    assert evaluate(expression) == value


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('echo hi')",
        "open('/etc/passwd').read()",
        "(1).__class__",
        "[x for x in range(3)]",
        "lambda: 1",
        "'a' * 3",
        "x",
        "sqrt(x=4)",
    ],
)
def test_calculate_refuses_code(expression: str) -> None:
    with pytest.raises(InvalidArgs):
        evaluate(expression)


def test_calculate_errors_are_clear() -> None:
    with pytest.raises(ToolError, match="division by zero"):
        evaluate("1 / 0")
    with pytest.raises(ToolError, match="exponent too large"):
        evaluate("9 ** 9 ** 9")
    with pytest.raises(InvalidArgs, match="not an arithmetic expression"):
        evaluate("2 +")


async def test_calculate_tool_result_is_a_plain_number(tmp_path: Path) -> None:
    model = ScriptedModel([[call("calculate", {"expression": "6 * 7.0"})], ["42"]])
    result = await Agent(model, tools_by_name(tmp_path).values()).run("6*7")
    tool_results = [m for m in result.messages if getattr(m, "role", "") == "tool"]
    assert tool_results[0].content == "42" and not tool_results[0].is_error


async def test_current_time_in_a_timezone(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            [
                call("current_time", {"timezone": "Asia/Tokyo"}),
                call("current_time", {}),
                call("current_time", {"timezone": "Mars/Olympus"}),
            ],
            ["done"],
        ]
    )
    events = [e async for e in Agent(model, tools_by_name(tmp_path).values()).stream("time?")]
    results = [e for e in events if isinstance(e, ToolCallResult)]
    by_order = {r.call_id: r for r in results}
    tokyo, utc, bad = (by_order[f"call_0_{i}"] for i in range(3))
    assert "(Asia/Tokyo," in tokyo.content and tokyo.content[:4].isdigit()
    assert "(UTC," in utc.content
    assert bad.state == "output-error" and "unknown time zone" in (bad.error or "")


async def test_files_list_read_and_refuse_outside(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello notes")
    (tmp_path.parent / "secret.txt").write_text("top secret")
    tools = tools_by_name(tmp_path)
    model = ScriptedModel(
        [
            [
                call("list_files"),
                call("read_file", {"path": "notes.txt"}),
                call("read_file", {"path": "../secret.txt"}),
                call("read_file", {"path": "/etc/hostname"}),
                call("read_file", {"path": "missing.txt"}),
            ],
            ["done"],
        ]
    )
    events = [e async for e in Agent(model, tools.values()).stream("files")]
    results = {e.call_id: e for e in events if isinstance(e, ToolCallResult)}
    assert "notes.txt" in results["call_0_0"].content
    assert results["call_0_1"].content == "hello notes"
    for i in (2, 3):
        assert results[f"call_0_{i}"].state == "output-error"
        assert "outside the sandbox" in (results[f"call_0_{i}"].error or "")
    assert "no file named" in (results["call_0_4"].error or "")


async def test_write_file_needs_approval_and_stays_in_the_sandbox(tmp_path: Path) -> None:
    box = tmp_path / "box"
    tools = tools_by_name(box)
    model = ScriptedModel(
        [
            [
                call("write_file", {"path": "a.txt", "content": "A"}),
                call("write_file", {"path": "../escape.txt", "content": "B"}),
            ],
            ["written"],
        ]
    )
    agent = Agent(model, tools.values())
    first = agent.start("write")
    events = [e async for e in first.events()]
    asked = [e for e in events if isinstance(e, ApprovalRequested)]
    assert [e.arguments["path"] for e in asked] == ["a.txt", "../escape.txt"]
    assert first.result is not None and first.result.status == "paused"
    assert not (box / "a.txt").exists()

    decisions = {e.call_id: Decision(True) for e in asked}
    second = agent.start(messages=first.result.messages, decisions=decisions)
    events = [e async for e in second.events()]
    results = {e.call_id: e for e in events if isinstance(e, ToolCallResult)}
    assert (box / "a.txt").read_text() == "A"
    assert results[asked[1].call_id].state == "output-error"
    assert "outside the sandbox" in (results[asked[1].call_id].error or "")
    assert not (tmp_path / "escape.txt").exists()


async def test_count_slowly_reports_progress_each_step(tmp_path: Path) -> None:
    model = ScriptedModel([[call("count_slowly", {"n": 3})], ["done"]])
    agent = Agent(model, tools_by_name(tmp_path, step=0.05).values())
    events = [e async for e in agent.stream("count")]
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert [(p.text, p.fraction) for p in progress] == [
        ("1 of 3", pytest.approx(1 / 3)),
        ("2 of 3", pytest.approx(2 / 3)),
        ("3 of 3", 1.0),
    ]
    result = next(e for e in events if isinstance(e, ToolCallResult))
    assert result.content == "counted to 3"


async def test_count_slowly_takes_about_a_second_per_step_and_honours_cancel(
    tmp_path: Path,
) -> None:
    counter = make_count_slowly()
    model = ScriptedModel([[call(counter.name, {"n": 30})], ["never"]])
    run = Agent(model, [counter]).start("count")
    seen: list[ToolProgress] = []
    started = time.monotonic()
    async for event in run.events():
        if isinstance(event, ToolProgress):
            seen.append(event)
            if len(seen) == 1:
                assert 0.8 < time.monotonic() - started < 2.5
                asyncio.get_running_loop().call_later(0.3, run.cancel, "stop")
        if isinstance(event, RunFinished):
            break
    assert time.monotonic() - started < 3.5
    assert len(seen) == 1
    assert run.result is not None and run.result.status == "cancelled"


def test_count_slowly_bounds_n(tmp_path: Path) -> None:
    counter = tools_by_name(tmp_path)["count_slowly"]
    with pytest.raises(InvalidArgs):
        counter.validate({"n": 0})
    with pytest.raises(InvalidArgs):
        counter.validate({"n": 1000})
