"""Results too large for the model's context become artifacts: what the model is sent
(asserted on the requests a ScriptedModel received), the built-in ``read_artifact``
tool (ranges, searches, refusals), the limits, expiry, and the journal-backed store on
SQLite and Postgres, which outlives the process that wrote it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from callwright import Agent, tool
from callwright.artifacts import (
    ArtifactInfo,
    Artifacts,
    FileArtifactStore,
    JournalArtifactStore,
    new_artifact_id,
)
from callwright.messages import ToolResultMessage
from callwright.models import ModelRequest, ScriptedModel, call

LOG = "".join(f"line {i:06d} status=ok value={i * 7}\n" for i in range(150_000))  # ~5 MB
ID = re.compile(r"art_[0-9a-f]{32}")


@tool
def big_log() -> str:
    """Returns a 5 MB log."""
    return LOG


@tool
def rows(count: int) -> list[dict[str, Any]]:
    """Returns ``count`` rows of a query."""
    return [{"id": i, "name": f"row {i}"} for i in range(count)]


def request_bytes(request: ModelRequest) -> int:
    """What the model was sent of the conversation, in bytes of text."""
    return sum(
        len(json.dumps(dataclasses.asdict(m), default=str).encode()) for m in request.messages
    )


def tool_results(request: ModelRequest) -> list[ToolResultMessage]:
    return [m for m in request.messages if isinstance(m, ToolResultMessage)]


def reader(*reads: dict[str, Any]) -> ScriptedModel:
    """Calls big_log, then read_artifact with each of ``reads`` (the artifact's id filled
    in from the preview), then answers."""

    def turn(request: ModelRequest) -> Any:
        results = tool_results(request)
        if not results:
            return [call("big_log")]
        if len(results) <= len(reads):
            found = ID.search(results[0].content)
            assert found is not None
            return [
                call("read_artifact", {"artifact_id": found.group(0), **reads[len(results) - 1]})
            ]
        return ["done"]

    return ScriptedModel(turn)


async def test_a_5_mb_result_reaches_the_model_as_a_preview_within_the_budget(
    tmp_path: Path,
) -> None:
    store = FileArtifactStore(tmp_path / "artifacts")
    config = Artifacts(store=store)
    model = reader({"start_line": 1001, "line_count": 3})
    agent = Agent(model, [big_log], artifacts=config)
    result = await agent.run("read the log")

    after_tool = model.requests[1]
    preview = tool_results(after_tool)[0].content
    assert len(preview.encode()) <= config.preview
    assert request_bytes(after_tool) < config.threshold  # the whole request, not only the result
    assert preview.startswith("[This result is too large to show whole (5,")
    assert "line 000000 status=ok" in preview and "line 149999 status=ok" in preview
    artifact_id = ID.search(preview).group(0)  # type: ignore[union-attr]
    assert store.read(artifact_id) == LOG.encode()

    lines = tool_results(model.requests[2])[1].content
    assert lines == (
        "[lines 1001-1003 of 150000]\n"
        "line 001000 status=ok value=7000\n"
        "line 001001 status=ok value=7007\n"
        "line 001002 status=ok value=7014"
    )
    assert result.output == "done"


async def test_the_model_reads_bytes_and_searches(tmp_path: Path) -> None:
    model = reader(
        {"byte_offset": 35, "byte_count": 35},
        {"search": "value=700007"},
        {"search": "^line 0000(1|2)0 ", "regex": True},
    )
    agent = Agent(model, [big_log], artifacts=Artifacts(store=FileArtifactStore(tmp_path)))
    await agent.run("read the log")
    results = [m.content for m in tool_results(model.requests[-1])]
    assert results[1] == "[bytes 35-70 of 5241267]\n" + LOG[35:70]
    assert results[2] == "[1 matching lines of 150000]\n100002: line 100001 status=ok value=700007"
    assert results[3] == (
        "[2 matching lines of 150000]\n"
        "11: line 000010 status=ok value=70\n"
        "21: line 000020 status=ok value=140"
    )


async def test_pathological_and_unsupported_patterns(tmp_path: Path) -> None:
    evil = "a" * 200_000 + "!"

    @tool
    def aaa() -> str:
        """A long line of a's."""
        return evil

    def turn(request: ModelRequest) -> Any:
        results = tool_results(request)
        if not results:
            return [call("aaa")]
        artifact_id = ID.search(results[0].content).group(0)  # type: ignore[union-attr]
        patterns = ["(a+)+$", "(a|aa)*!$", r"(?=a)", r"(a)\1"]
        if len(results) <= len(patterns):
            pattern = patterns[len(results) - 1]
            return [
                call(
                    "read_artifact", {"artifact_id": artifact_id, "search": pattern, "regex": True}
                )
            ]
        return ["done"]

    model = ScriptedModel(turn)
    agent = Agent(model, [aaa], artifacts=Artifacts(store=FileArtifactStore(tmp_path)))
    result = await agent.run("go")
    answers = [m.content for m in tool_results(model.requests[-1])][1:]
    assert answers[0] == "[0 matching lines of 1]\n"  # the classic blow-up, linear here
    assert answers[1] == "[1 matching lines of 1]\n1: " + "a" * 300
    for refused in answers[2:]:
        assert refused.startswith("Invalid arguments: pattern") and "not supported" in refused
    assert result.status == "completed"


async def test_small_results_pass_whole_and_per_tool_thresholds(tmp_path: Path) -> None:
    config = Artifacts(store=FileArtifactStore(tmp_path), tools={"rows": 200_000})
    model = ScriptedModel([[call("rows", {"count": 3000})], ["done"]])
    agent = Agent(model, [rows], artifacts=config)
    await agent.run("go")
    content = tool_results(model.requests[1])[0].content
    assert len(content) > config.threshold and not content.startswith("[This result")
    assert list(tmp_path.iterdir()) == []


async def test_structured_results_are_stored_as_json(tmp_path: Path) -> None:
    store = FileArtifactStore(tmp_path)
    model = ScriptedModel([[call("rows", {"count": 40_000})], ["done"]])
    agent = Agent(model, [rows], artifacts=Artifacts(store=store))
    events = [e async for e in agent.stream("go")]
    result = next(e for e in events if getattr(e, "type", "") == "tool-call-result")
    assert result.artifact is not None and result.artifact["mediaType"] == "application/json"
    assert result.output == {"artifact": result.artifact, "preview": result.content}
    assert result.artifact["url"] == f"/runs/{events[0].run_id}/artifacts/{result.artifact['id']}"
    stored = json.loads(store.read(result.artifact["id"]))
    assert len(stored) == 40_000 and stored[-1] == {"id": 39_999, "name": "row 39999"}


async def test_an_oversized_result_is_an_error_result(tmp_path: Path) -> None:
    config = Artifacts(store=FileArtifactStore(tmp_path), max_size=1024 * 1024)
    model = ScriptedModel([[call("big_log")], ["done"]])
    await Agent(model, [big_log], artifacts=config).run("go")
    message = tool_results(model.requests[1])[0]
    assert message.is_error
    assert message.content == (
        "The result is too large to keep: 5,241,267 bytes, over the limit of 1,048,576. "
        "Ask for less (a filter, a smaller range, a page)."
    )
    assert list(tmp_path.iterdir()) == []


async def test_past_max_per_run_a_result_is_cut_and_not_kept(tmp_path: Path) -> None:
    config = Artifacts(store=FileArtifactStore(tmp_path), max_per_run=2)
    model = ScriptedModel([[call("big_log"), call("big_log"), call("big_log")], ["done"]])
    await Agent(model, [big_log], artifacts=config).run("go")
    contents = [m.content for m in tool_results(model.requests[1])]
    assert [c.startswith("[This result is too large to show whole") for c in contents] == [
        True,
        True,
        True,
    ]
    assert sum("was not kept" in c for c in contents) == 1
    assert all(len(c.encode()) <= config.preview for c in contents)
    assert len(list(tmp_path.glob("art_*.json"))) == 2


async def test_forged_foreign_and_unknown_ids_read_as_not_found(tmp_path: Path) -> None:
    store = FileArtifactStore(tmp_path)
    foreign = new_artifact_id()
    store.put(info(foreign, owner="someone-else", thread_id="t1"), b"secret")
    other_thread = new_artifact_id()
    store.put(info(other_thread, owner="", thread_id="another-thread"), b"secret")
    ids = [foreign, other_thread, new_artifact_id(), "../../etc/passwd", "art_" + "0" * 32 + "/x"]
    model = ScriptedModel(
        [[call("read_artifact", {"artifact_id": i}, id=f"c{n}") for n, i in enumerate(ids)], ["ok"]]
    )
    agent = Agent(model, [], artifacts=Artifacts(store=store))
    await agent.run("go", thread_id="t1")
    answers = [m.content for m in tool_results(model.requests[1])]
    assert answers == [f"Artifact not found: {i[:60]!r}." for i in ids]


def info(
    artifact_id: str, *, owner: str = "", thread_id: str = "t", ttl: float = 60
) -> ArtifactInfo:
    now = time.time()
    return ArtifactInfo(
        artifact_id, owner, thread_id, "r", "c", "x", 6, 1, "text/plain", now, now + ttl
    )


def test_expiry_removes_artifacts(tmp_path: Path) -> None:
    store = FileArtifactStore(tmp_path)
    old, young = new_artifact_id(), new_artifact_id()
    store.put(info(old, ttl=10), b"old")
    store.put(info(young, ttl=1000), b"young")
    later = time.time() + 100
    assert store.get(old, now=later) is None and store.get(young, now=later) is not None
    assert store.expire(now=later) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{young}.bin", f"{young}.json"]
    assert store.read(old) == b""


def test_journal_store_on_both_backends(journal_target: str) -> None:
    store = JournalArtifactStore(journal_target)
    try:
        old, young = new_artifact_id(), new_artifact_id()
        data = LOG.encode()
        store.put(info(old, ttl=10), b"old")
        store.put(info(young, ttl=1000), data)
        assert store.read(young) == data
        assert store.read(young, 7, 13) == data[7:13]
        assert store.get("art_nothing") is None and store.read("'; DROP TABLE artifacts;--") == b""
        assert store.expire(now=time.time() + 100) == 1
        assert store.get(old, now=0) is None and store.get(young) is not None
        JournalArtifactStore(journal_target).close()  # the table is made once, then found
    finally:
        store.close()


AGENT = """
import asyncio, sys
from callwright import Agent, tool
from callwright.artifacts import Artifacts, JournalArtifactStore
from callwright.models import ScriptedModel, call
from callwright.store import open_journal

@tool
def big_log() -> str:
    '''A big log.'''
    return "".join(f"line {i:06d} status=ok value={i * 7}\\n" for i in range(150_000))

async def main() -> None:
    journal = open_journal(sys.argv[1])
    store = JournalArtifactStore(journal)
    model = ScriptedModel([[call("big_log")], ["done"]])
    agent = Agent(model, [big_log], artifacts=Artifacts(store=store))
    events = [e async for e in agent.stream("go", thread_id="t1")]
    result = next(e for e in events if getattr(e, "type", "") == "tool-call-result")
    print(result.artifact["id"])
    journal.close()

asyncio.run(main())
"""


def test_journal_backed_artifacts_survive_the_process_that_wrote_them(
    journal_target: str, tmp_path: Path
) -> None:
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(AGENT))
    proc = subprocess.run(
        [sys.executable, str(script), journal_target],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    artifact_id = proc.stdout.strip()
    store = JournalArtifactStore(journal_target)
    try:
        found = store.get(artifact_id)
        assert found is not None and found.thread_id == "t1" and found.size == len(LOG.encode())
        assert (
            hashlib.sha256(store.read(artifact_id)).digest()
            == hashlib.sha256(LOG.encode()).digest()
        )
    finally:
        store.close()


async def test_a_large_mcp_result_becomes_an_artifact_too(tmp_path: Path) -> None:
    from callwright.mcp import MCPServer

    big = MCPServer.stdio(sys.executable, [str(Path(__file__).parent / "big_server.py")])
    store = FileArtifactStore(tmp_path)
    model = ScriptedModel([[call("dump", {"lines": 150_000})], ["done"]])
    async with Agent(model, toolsets=[big], artifacts=Artifacts(store=store)) as agent:
        await agent.run("go")
    preview = tool_results(model.requests[1])[0].content
    assert preview.startswith("[This result is too large to show whole (5,241,267 bytes")
    assert len(preview.encode()) <= Artifacts().preview
    artifact_id = ID.search(preview).group(0)  # type: ignore[union-attr]
    assert store.read(artifact_id) == LOG.encode()


class BrokenStore(FileArtifactStore):
    def put(self, info: ArtifactInfo, data: bytes) -> None:
        raise OSError(f"disk full at {self.directory}/secret-path")


async def test_a_failing_store_is_an_error_result_that_leaks_nothing(tmp_path: Path) -> None:
    model = ScriptedModel([[call("big_log")], ["done"]])
    await Agent(model, [big_log], artifacts=Artifacts(store=BrokenStore(tmp_path))).run("go")
    message = tool_results(model.requests[1])[0]
    assert message.is_error and message.content == (
        "The result is too large to show whole (5,241,267 bytes) and could not be stored. "
        "Ask for less (a filter, a smaller range, a page)."
    )


def test_the_postgres_store_goes_on_after_the_database_restarts(postgres_url: Any) -> None:
    url = postgres_url.fresh_database()
    store = JournalArtifactStore(url)
    try:
        before, after = new_artifact_id(), new_artifact_id()
        store.put(info(before), b"before")
        postgres_url.restart()
        store.put(info(after), b"after")
        assert store.read(before) == b"before" and store.read(after) == b"after"
    finally:
        store.close()
        postgres_url.drop_database(url)
