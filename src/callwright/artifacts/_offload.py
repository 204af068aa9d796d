"""``Artifacts``: results too large for the model's context are stored, and the model
gets a preview and a handle instead.

The executor hands every successful result to ``RunArtifacts.offload`` (one per run,
made by ``Agent.settings``). A result whose text is within the threshold passes
unchanged; a larger one is written to the store (in a worker thread) and replaced by a
``ToolResult`` whose ``text`` (what the model sees) is a header naming the artifact,
then the result's first and last lines within the preview budget; its ``content``
(what UIs get as the output) is ``{"artifact": {...}, "preview": <that text>}``, the
artifact's id, size and download path beside the same preview. A result over
``max_size`` is an error result; past ``max_per_run`` artifacts in one run a large
result is cut to its preview without being kept.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..call import ToolError, ToolResult, to_model_text
from ._store import ArtifactInfo, ArtifactStore, FileArtifactStore, new_artifact_id

if TYPE_CHECKING:
    from ..context import RunScope
    from ..tool import Tool

log = logging.getLogger("callwright.artifacts")
KIB = 1024
MIB = 1024 * KIB
TOOL_NAME = "read_artifact"
"""The built-in tool through which the model reads an artifact."""


@dataclass
class Artifacts:
    """Turns results too large for the model's context into artifacts.

    Give it to ``Agent(artifacts=Artifacts(...))``. The sizes are bytes of UTF-8 text:
    the result as the model would have seen it (a string as it is, any other value as
    JSON).
    """

    store: ArtifactStore | None = None
    """Where artifacts are kept. None: a ``FileArtifactStore`` in a private temporary
    directory, or, served with a journal (``create_app(journal=...)``), the journal's
    database (``JournalArtifactStore``), made when first needed."""
    threshold: int = 32 * KIB
    """A result larger than this becomes an artifact."""
    tools: Mapping[str, int] = field(default_factory=dict)
    """Per-tool thresholds by tool name, over ``threshold`` (an MCP tool too)."""
    preview: int = 4 * KIB
    """About how many bytes the model gets instead: a header, the result's beginning
    and its end."""
    max_size: int = 64 * MIB
    """A larger result is not kept: the model gets an error result saying so."""
    max_per_run: int = 100
    """Past this many artifacts in one run, a large result is cut to its preview and
    not kept (the model is told)."""
    ttl: float = 24 * 3600.0
    """Seconds an artifact is kept; expired ones are not found and are deleted."""
    read_limit: int = 8 * KIB
    """The most bytes one ``read_artifact`` call returns to the model."""
    search_seconds: float = 2.0
    """How long one search may take before it stops and reports what it found."""
    sweep_seconds: float = 60.0
    """Expired artifacts are deleted when an artifact is stored, at most this often."""
    _swept: float = field(default=0.0, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.preview < 512 or self.preview > self.threshold:
            raise ValueError("Artifacts: preview must be at least 512 and at most threshold")
        if self.read_limit > self.threshold:
            raise ValueError("Artifacts: read_limit must be at most threshold")

    def the_store(self) -> ArtifactStore:
        """The store, made on first use when none was given."""
        if self.store is None:
            self.store = FileArtifactStore()
        return self.store

    def threshold_for(self, tool_name: str) -> int:
        """The size over which ``tool_name``'s results become artifacts."""
        return self.tools.get(tool_name, self.threshold)

    def tool(self) -> Tool:
        """The built-in ``read_artifact`` tool over this configuration's store."""
        from ._tool import read_artifact_tool

        return read_artifact_tool(self)

    def for_run(self) -> RunArtifacts:
        """What one run uses (it counts the run's artifacts)."""
        return RunArtifacts(self)

    def sweep_due(self, now: float) -> bool:
        """Whether to delete expired artifacts now (at most every ``sweep_seconds``)."""
        if now - self._swept < self.sweep_seconds:
            return False
        self._swept = now
        return True


def download_path(run_id: str, artifact_id: str) -> str:
    """Where the server serves an artifact (``Endpoints.handle_artifact``)."""
    return f"/runs/{run_id}/artifacts/{artifact_id}"


class RunArtifacts:
    """One run's side of ``Artifacts``: stores its large results and counts them."""

    def __init__(self, config: Artifacts) -> None:
        self.config = config
        self.count = 0

    async def offload(
        self, result: ToolResult, call_id: str, tool_name: str, scope: RunScope[Any]
    ) -> ToolResult:
        """``result`` unchanged if it is small enough, else its artifact's preview; raises
        ``ToolError`` for a result over ``max_size``."""
        config = self.config
        if tool_name == TOOL_NAME:
            return result
        text = result.text if result.text is not None else to_model_text(result.content)
        threshold = config.threshold_for(tool_name)
        if len(text) * 4 <= threshold:  # no character is longer than 4 bytes in UTF-8
            return result
        data = text.encode()
        if len(data) <= threshold:
            return result
        if len(data) > config.max_size:
            raise ToolError(
                f"The result is too large to keep: {len(data):,} bytes, over the limit of "
                f"{config.max_size:,}. Ask for less (a filter, a smaller range, a page)."
            )
        now = time.time()
        media_type = "text/plain" if isinstance(result.content, str) else "application/json"
        info = ArtifactInfo(
            id=new_artifact_id(),
            owner=scope.principal or "",
            thread_id=scope.thread_id,
            run_id=scope.run_id,
            call_id=call_id,
            tool_name=tool_name,
            size=len(data),
            lines=data.count(b"\n") + (0 if data.endswith(b"\n") else 1),
            media_type=media_type,
            created_at=now,
            expires_at=now + config.ttl,
        )
        if self.count >= config.max_per_run:
            return _cut(result, info, data, config)
        self.count += 1
        try:
            await asyncio.to_thread(self._put, info, data, now)
        except Exception:  # the store's own message may name files or hosts: logged only
            log.exception("storing artifact %s of call %s failed", info.id, call_id)
            raise ToolError(
                f"The result is too large to show whole ({info.size:,} bytes) and could not "
                "be stored. Ask for less (a filter, a smaller range, a page)."
            ) from None
        model_text = _header(info) + preview(data, config.preview - len(_header(info)))
        reference = {
            "id": info.id,
            "url": download_path(info.run_id, info.id),
            "size": info.size,
            "lines": info.lines,
            "mediaType": info.media_type,
            "expiresAt": info.expires_at,
        }
        content = {"artifact": reference, "preview": model_text}
        return ToolResult(content, result.details, model_text, reference, result.files)

    def _put(self, info: ArtifactInfo, data: bytes, now: float) -> None:
        store = self.config.the_store()
        if self.config.sweep_due(now):
            store.expire(now)
        store.put(info, data)


def _header(info: ArtifactInfo) -> str:
    return (
        f"[This result is too large to show whole ({info.size:,} bytes, {info.lines:,} "
        f"lines), so it was stored as artifact {info.id}. Its beginning and end follow. "
        f"Call {TOOL_NAME} with artifact_id {info.id!r} to read lines or bytes of it, "
        "or to search it.]\n"
    )


def _cut(result: ToolResult, info: ArtifactInfo, data: bytes, config: Artifacts) -> ToolResult:
    header = (
        f"[This result is too large to show whole ({info.size:,} bytes, {info.lines:,} "
        f"lines) and was not kept: this run already stored {config.max_per_run} "
        "artifacts. Its beginning and end follow.]\n"
    )
    text = header + preview(data, config.preview - len(header))
    return ToolResult({"preview": text}, result.details, text, files=result.files)


def preview(data: bytes, budget: int) -> str:
    """The beginning and the end of ``data`` within about ``budget`` bytes, cut at line
    ends where one is near and never inside a character, with a marker between."""
    half = max(budget // 2 - 40, 64)
    head = data[:half]
    newline = head.rfind(b"\n")
    if newline >= half // 2:
        head = head[: newline + 1]
    tail = data[-half:]
    newline = tail.find(b"\n")
    if 0 <= newline < half // 2:
        tail = tail[newline + 1 :]
    omitted = len(data) - len(head) - len(tail)
    head_text = head.decode(errors="ignore")
    tail_text = tail.decode(errors="ignore")
    gap = "" if head_text.endswith("\n") else "\n"
    return f"{head_text}{gap}[... {omitted:,} bytes not shown ...]\n{tail_text}"
