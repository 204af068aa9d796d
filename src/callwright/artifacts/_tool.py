"""The built-in ``read_artifact`` tool: the model reads lines or bytes of an artifact, or
searches it, a bounded piece at a time.

It is in the toolbox of every agent given ``Artifacts`` (not only once an artifact
exists): the tools a model is shown stay the same from step to step and from run to
run, so a thread resumed elsewhere can still read what an earlier run stored.

The model reads only artifacts of its own thread and principal; another id, a forged
one and an expired one all read as "not found". A search is a substring, or a regex
matched by the linear-time engine that checks tool schemas' ``pattern`` (no
backtracking: a pathological pattern costs time linear in the text), line by line in a
worker thread, and stops after ``Artifacts.search_seconds`` or enough matches.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from .._jsonschema import check_pattern
from ..call import InvalidArgs, ToolError
from ..context import ToolContext
from ..tool import Tool, tool
from ._offload import TOOL_NAME
from ._store import ArtifactInfo, ArtifactStore

if TYPE_CHECKING:
    from ._offload import Artifacts

MAX_MATCHES = 50
"""The most matching lines one search returns."""
MATCH_WIDTH = 300
"""A matching line longer than this is cut to it."""
_REGEX = jsonschema_rs.RegexOptions(size_limit=1 << 20)


def read_artifact_tool(config: Artifacts) -> Tool:
    """``read_artifact`` over ``config``'s store and limits."""

    async def read_artifact(
        artifact_id: str,
        ctx: ToolContext[Any],
        start_line: int | None = None,
        line_count: int | None = None,
        byte_offset: int | None = None,
        byte_count: int | None = None,
        search: str | None = None,
        regex: bool = False,
    ) -> str:
        """Read part of a stored artifact (a tool result too large to show whole).

        Give start_line (and line_count) for lines, byte_offset (and byte_count) for
        bytes, or search for the lines that contain a text. What comes back is cut to a
        few kilobytes: read further in more calls.

        Args:
            artifact_id: The artifact's id, art_ and 32 hex digits, from the result.
            start_line: The first line to read, counting from 1.
            line_count: How many lines to read from start_line.
            byte_offset: The first byte to read, counting from 0.
            byte_count: How many bytes to read from byte_offset.
            search: A text to find; the matching lines come back with their numbers.
            regex: Whether search is a regular expression (no lookaround, no backreferences).
        """
        store = config.the_store()
        scope = ctx.run
        owner = (scope.principal if scope is not None else None) or ""
        thread = scope.thread_id if scope is not None else ""
        info = await asyncio.to_thread(store.get, artifact_id)
        if info is None or info.owner != owner or info.thread_id != thread:
            raise ToolError(f"Artifact not found: {artifact_id[:60]!r}.")
        limit = config.read_limit
        if search is not None:
            if regex:
                try:
                    check_pattern(search)
                except ValueError as exc:
                    raise InvalidArgs(str(exc)) from None
            return await asyncio.to_thread(
                search_lines, store, info, search, regex, config.search_seconds, limit
            )
        if byte_offset is not None:
            if byte_offset < 0 or (byte_count is not None and byte_count < 0):
                raise InvalidArgs("byte_offset and byte_count cannot be negative")
            count = min(limit, byte_count if byte_count is not None else limit)
            data = await asyncio.to_thread(store.read, info.id, byte_offset, byte_offset + count)
            end = byte_offset + len(data)
            return f"[bytes {byte_offset}-{end} of {info.size}]\n" + data.decode(errors="replace")
        first = 1 if start_line is None else start_line
        if first < 1 or (line_count is not None and line_count < 1):
            raise InvalidArgs("start_line and line_count count from 1")
        return await asyncio.to_thread(read_lines, store, info, first, line_count, limit)

    return tool(name=TOOL_NAME, title="Read artifact", idempotent=True)(read_artifact)


def read_lines(
    store: ArtifactStore, info: ArtifactInfo, first: int, count: int | None, limit: int
) -> str:
    """Lines ``first`` .. ``first + count - 1`` (as many as fit in ``limit`` bytes), with a
    header saying which were read, so that the model knows where to go on."""
    data = store.read(info.id)
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    if first > len(lines):
        return f"[the artifact has {len(lines)} lines]"
    wanted = lines[first - 1 : len(lines) if count is None else first - 1 + count]
    out: list[bytes] = []
    size = 0
    for line in wanted:
        if size + len(line) + 1 > limit:
            if not out:  # one line longer than the limit: its beginning
                out.append(line[: max(limit - 1, 0)])
            break
        out.append(line)
        size += len(line) + 1
    last = first + len(out) - 1
    header = f"[lines {first}-{last} of {len(lines)}]\n"
    return header + b"\n".join(out).decode(errors="replace")


def search_lines(
    store: ArtifactStore,
    info: ArtifactInfo,
    pattern: str,
    regex: bool,
    seconds: float,
    limit: int,
) -> str:
    """The artifact's lines that contain ``pattern`` (or match it as a regex), numbered,
    at most ``MAX_MATCHES`` and ``limit`` bytes; stops after ``seconds`` and says so."""
    text = store.read(info.id).decode(errors="replace")
    matches = _matcher(pattern, regex)
    deadline = time.monotonic() + seconds
    found: list[str] = []
    size = 0
    stopped = ""
    for number, line in enumerate(text.split("\n"), start=1):
        if number % 1024 == 0 and time.monotonic() > deadline:
            stopped = f"; the search stopped at line {number} (time limit)"
            break
        if not matches(line):
            continue
        shown = f"{number}: {line[:MATCH_WIDTH]}"
        if len(found) >= MAX_MATCHES or size + len(shown) + 1 > limit:
            stopped = f"; more matches after line {number} were not shown"
            break
        found.append(shown)
        size += len(shown) + 1
    header = f"[{len(found)} matching lines of {info.lines}{stopped}]\n"
    return header + "\n".join(found)


def _matcher(pattern: str, regex: bool) -> Any:
    if not regex:
        return lambda line: pattern in line
    validator = jsonschema_rs.validator_for(
        {"type": "string", "pattern": pattern}, pattern_options=_REGEX
    )
    return validator.is_valid
