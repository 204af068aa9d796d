"""The demo agent's tools: real behaviour, through the agent loop where it matters."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from callwright import Agent, Decision
from callwright.call import InvalidArgs, ToolError
from callwright.demo import Sandbox, demo_tools, evaluate, make_count_slowly
from callwright.events import ApprovalRequested, RunFinished, ToolCallResult, ToolProgress
from callwright.models import ScriptedModel, call
from callwright.server import create_app
from live_server import Server


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


# --- bounded arithmetic -------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("((3**1000)**1000)**40", "digits"),
        ("(2**900)**900", "digits"),
        ("(10**999)*(10**999)*(10**999)*(10**999)*(10**999)", "digits"),
        ("round(5, -10**6)", "digits"),
        ("2**(10**6)", "exponent too large"),
        ("-" * 400 + "1", "nests too deeply"),
        ("1" * 501, "too long"),
    ],
)
def test_calculate_refuses_what_it_cannot_compute_quickly(expression: str, why: str) -> None:
    with pytest.raises(InvalidArgs, match=why):
        evaluate(expression)


def test_calculate_still_computes_big_but_bounded_numbers() -> None:
    assert evaluate("2 ** 1000") == 2**1000
    assert evaluate("(10 ** 999) * (10 ** 999)") == 10**1998
    assert evaluate("3 ** -2") == pytest.approx(1 / 9)
    assert evaluate("+".join(["1"] * 200)) == 200


# --- the sandbox --------------------------------------------------------------------


@pytest.fixture
def temp_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp folder of the test's own standing in for the shared one."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.delenv("CALLWRIGHT_SANDBOX", raising=False)
    return shared


def test_the_default_sandbox_is_private_to_the_user(temp_folder: Path) -> None:
    root = Sandbox().ensure()
    info = os.lstat(root)
    assert root.parent == temp_folder.resolve()
    assert stat.S_ISDIR(info.st_mode) and not stat.S_ISLNK(info.st_mode)
    assert stat.S_IMODE(info.st_mode) == 0o700
    assert info.st_uid == os.getuid()


@pytest.mark.parametrize(
    "planted_name", ["callwright-sandbox", f"callwright-sandbox-{os.getuid()}"]
)
async def test_a_symlink_planted_in_the_temp_folder_is_not_followed(
    temp_folder: Path, tmp_path: Path, planted_name: str
) -> None:
    elsewhere = tmp_path / "victim"
    elsewhere.mkdir()
    (temp_folder / planted_name).symlink_to(elsewhere, target_is_directory=True)
    tools = {t.name: t for t in demo_tools(Sandbox())}
    model = ScriptedModel([[call("write_file", {"path": "x.txt", "content": "pwned"})], ["ok"]])
    agent = Agent(model, tools.values())
    first = agent.start("write")
    asked = [e async for e in first.events() if isinstance(e, ApprovalRequested)]
    assert first.result is not None
    second = agent.start(
        messages=first.result.messages, decisions={e.call_id: Decision(True) for e in asked}
    )
    events = [e async for e in second.events()]
    assert any(isinstance(e, ToolCallResult) and e.state == "output-available" for e in events)
    assert list(elsewhere.iterdir()) == []
    assert os.path.islink(temp_folder / planted_name)


def test_a_sandbox_folder_someone_else_can_enter_is_not_used(temp_folder: Path) -> None:
    shared = temp_folder / f"callwright-sandbox-{os.getuid()}"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    root = Sandbox().ensure()
    assert root != shared.resolve()
    assert stat.S_IMODE(os.lstat(root).st_mode) == 0o700


async def test_file_errors_never_name_the_servers_paths(tmp_path: Path) -> None:
    box = tmp_path / "box"
    (box / "folder").mkdir(parents=True)
    (box / "loop").symlink_to(box / "loop")
    tools = tools_by_name(box)
    model = ScriptedModel(
        [
            [
                call("read_file", {"path": "folder"}),
                call("read_file", {"path": "loop"}),
            ],
            ["done"],
        ]
    )
    events = [e async for e in Agent(model, tools.values()).stream("files")]
    errors = [e.error or "" for e in events if isinstance(e, ToolCallResult)]
    assert len(errors) == 2 and all(errors)
    assert not any(str(tmp_path) in text for text in errors)
    tool = tools["write_file"]
    assert tool.executor is not None
    with pytest.raises(ToolError) as info:
        await tool.executor({"path": "folder", "content": "x"}, None)
    assert "folder" in info.value.message and str(tmp_path) not in info.value.message


class RacingSandbox(Sandbox):
    """A sandbox whose folder ``notes`` another process swaps for a symlink to
    ``outside`` just after each path is resolved: the resolve-then-open race, made
    certain."""

    def __init__(self, root: Path, outside: Path) -> None:
        super().__init__(root)
        self.outside = outside

    def resolve(self, path: str) -> Path:
        target = super().resolve(path)
        notes = self.root / "notes"
        if notes.is_dir() and not notes.is_symlink():
            shutil.rmtree(notes)
            notes.symlink_to(self.outside, target_is_directory=True)
        return target


def racing(tmp_path: Path) -> tuple[RacingSandbox, Path]:
    box, outside = tmp_path / "box", tmp_path / "outside"
    (box / "notes").mkdir(parents=True)
    (box / "notes" / "a.txt").write_text("inside")
    outside.mkdir()
    (outside / "a.txt").write_text("top secret")
    return RacingSandbox(box, outside), outside


def test_a_symlink_swapped_in_after_resolve_is_not_read_through_over_http(
    tmp_path: Path,
) -> None:
    sandbox, _ = racing(tmp_path)
    model = ScriptedModel([[call("read_file", {"path": "notes/a.txt"})], ["done"]])
    with Server(create_app(Agent(model, demo_tools(sandbox)))) as server:
        body = {
            "threadId": "t-race",
            "runId": "r-race",
            "messages": [{"id": "u1", "role": "user", "content": "read notes/a.txt"}],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
        }
        response = httpx.post(server.url + "/agui", json=body, timeout=30)
    assert response.status_code == 200, response.text
    frames = [json.loads(b[6:]) for b in response.text.split("\n\n") if b.startswith("data: ")]
    (result,) = [f for f in frames if f["type"] == "TOOL_CALL_RESULT"]
    assert "top secret" not in response.text
    assert "symbolic links" in result["content"] or "not a directory" in result["content"]


async def test_a_symlink_swapped_in_after_resolve_is_not_written_through(tmp_path: Path) -> None:
    sandbox, outside = racing(tmp_path)
    write = {t.name: t for t in demo_tools(sandbox)}["write_file"]
    model = ScriptedModel([[call("write_file", {"path": "notes/a.txt", "content": "B"})], ["ok"]])
    agent = Agent(model, [write])
    first = agent.start("write")
    asked = [e async for e in first.events() if isinstance(e, ApprovalRequested)]
    assert first.result is not None
    second = agent.start(
        messages=first.result.messages, decisions={e.call_id: Decision(True) for e in asked}
    )
    results = [e async for e in second.events() if isinstance(e, ToolCallResult)]
    assert [r.state for r in results] == ["output-error"]
    assert (outside / "a.txt").read_text() == "top secret"
