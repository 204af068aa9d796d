"""An MCP server's task that is running when the callwright process dies is followed again
after the restart (durable resumption), on both journal backends.

A real callwright process (task_agent.py) calls a servers/tasking.py tool that becomes a
task, and is killed (SIGKILL) once the task reports progress: the call's operation row
says ``started`` and keeps the task's id as the call's handle. A new journal (the
restarted process) recovers the run, and the resumed run polls the same task
(``tasks/get``) instead of calling the tool again: its progress, its real result, one
call on the server. When the server no longer knows the task, the call is in doubt, not
called again (unless the tool is idempotent); a task that never finishes is cancelled
at the call's timeout, counted from when the call first followed it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from callwright import InDoubt, start_journaled
from callwright.call import is_in_doubt
from callwright.events import Event, ToolCallResult, ToolProgress
from callwright.store import SQLJournal, open_journal

SCRIPT = Path(__file__).resolve().parent / "task_agent.py"
_spec = importlib.util.spec_from_file_location("mcp_task_agent", SCRIPT)
assert _spec is not None and _spec.loader is not None
task_agent = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(task_agent)
TaskingPeer = Any  # conftest.TaskingPeer (the tasking fixture's type)


def crash_mid_task(
    target: str, peer: TaskingPeer, tool: str, arguments: dict[str, Any], timeout: float = 0
) -> None:
    """Run the call in a process of its own and kill it once the task is running."""
    command = [sys.executable, str(SCRIPT), target, peer.url, tool, json.dumps(arguments)]
    if timeout:
        command.append(str(timeout))
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout
    assert out is not None
    try:
        line: list[bytes] = []
        reader = threading.Thread(target=lambda: line.append(out.readline()), daemon=True)
        reader.start()
        reader.join(60)
        assert line == [b"running\n"], "the task never reported progress"
    finally:
        proc.kill()
        proc.wait()


async def recover_and_resume(
    target: str, peer: TaskingPeer, tool: str, arguments: dict[str, Any], timeout: float | None
) -> tuple[SQLJournal, list[Event], Any, str]:
    """A new process's journal: recover the killed run, then resume it on its thread."""
    journal = open_journal(target)
    (run_id,) = journal.recover(set())
    [op] = [o for o in journal.operations(run_id) if o["name"] != "model"]
    assert op["status"] == "started"  # not in doubt: the call saved its task
    async with task_agent.agent(peer.url, tool, arguments, timeout) as made:
        run, recorder = start_journaled(journal, made, task_agent.THREAD, "r2", [], [])
        events = []
        async for event in run.events():
            recorder.record(event, b"frame")
            events.append(event)
    return journal, events, run.result, run_id


async def test_a_running_task_is_polled_again_after_the_process_is_killed(
    tasking: TaskingPeer, journal_target: str
) -> None:
    arguments = {"n": 20, "step": 0.25}
    crash_mid_task(journal_target, tasking, "count", arguments)
    journal, events, result, run_id = await recover_and_resume(
        journal_target, tasking, "count", arguments, None
    )
    try:
        progress = [e.text for e in events if isinstance(e, ToolProgress)]
        assert progress, "no progress after the restart"
        steps = [int(text.removeprefix("step ").removesuffix("/20")) for text in progress]
        assert steps == sorted(steps) and set(steps) <= set(range(1, 21))  # the task's own
        (done,) = [e for e in events if isinstance(e, ToolCallResult)]
        assert done.state == "output-available" and done.content == "counted to 20"
        assert result.status == "completed" and result.output == "Done: counted to 20"
        assert tasking.calls() == ["count"]  # the task was polled again, the tool not called
        [op] = [o for o in journal.operations(run_id) if o["name"] != "model"]
        assert op["status"] == "completed"
    finally:
        journal.close()


async def test_a_task_the_server_no_longer_knows_is_in_doubt_not_called_again(
    tasking: TaskingPeer, journal_target: str, tmp_path: Path
) -> None:
    arguments = {"n": 100, "step": 0.25}
    crash_mid_task(journal_target, tasking, "count", arguments)
    tasking.stop()  # the MCP server restarts too, and forgets its tasks
    folder = tmp_path / "restarted"
    folder.mkdir()
    restarted = type(tasking)(folder)
    try:
        journal, events, result, _ = await recover_and_resume(
            journal_target, restarted, "count", arguments, None
        )
        journal.close()
    finally:
        restarted.stop()
    (done,) = [e for e in events if isinstance(e, ToolCallResult)]
    assert done.error_kind == InDoubt.kind and is_in_doubt(done.content)
    assert "no longer knows the task" in done.content
    assert result.status == "completed" and result.output.endswith("(error)")
    assert restarted.calls() == []  # not called again on the restarted server


async def test_an_idempotent_tool_whose_task_is_gone_is_called_again(
    tasking: TaskingPeer, journal_target: str, tmp_path: Path
) -> None:
    arguments = {"n": 4, "step": 0.25}
    crash_mid_task(journal_target, tasking, "recount", arguments)
    tasking.stop()
    folder = tmp_path / "restarted"
    folder.mkdir()
    restarted = type(tasking)(folder)
    try:
        journal, events, result, _ = await recover_and_resume(
            journal_target, restarted, "recount", arguments, None
        )
        journal.close()
    finally:
        restarted.stop()
    (done,) = [e for e in events if isinstance(e, ToolCallResult)]
    assert done.state == "output-available" and done.content == "counted to 4"
    assert result.output == "Done: counted to 4"
    assert restarted.calls() == ["recount"]  # called again: the tool says that is safe


async def test_a_task_that_never_finishes_is_cancelled_at_the_call_deadline_after_a_restart(
    tasking: TaskingPeer, journal_target: str
) -> None:
    crash_mid_task(journal_target, tasking, "forever", {}, timeout=3)
    await asyncio.sleep(3)  # the restart comes after the call's deadline
    journal, events, result, _ = await recover_and_resume(journal_target, tasking, "forever", {}, 3)
    journal.close()
    (done,) = [e for e in events if isinstance(e, ToolCallResult)]
    assert done.error_kind == "timed-out"
    # the deadline counts from the first process: no poll, no new 3 s of waiting
    assert not [e for e in events if isinstance(e, ToolProgress)]
    assert result.status == "completed"
    assert len(tasking.cancelled()) == 1  # the server was told to stop the task
    assert tasking.calls() == ["forever"]
