"""MCP shapes to callwright's: a listed tool to a ``Tool``, a call's result to a ``ToolResult``.

A result's structured content is what UIs get as the call's output, and its text is
what the model reads; content the model cannot read as text (an image, a blob) is
named in the text and kept whole for UIs in ``details``, and images, audio and blob
resources also become the result's files, which the model sees where its provider
takes them. ``isError`` results become
``ToolError``: the model sees the server's words as an error result and can react.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import mcp_types as types

from ..call import ToolError, ToolResult
from ..messages import FilePart
from ..tool import ApprovalPolicy, Executor, Tool

log = logging.getLogger("callwright.mcp")

ApprovalRule = bool | Callable[[types.Tool], bool] | None
"""Which MCP tools need a human's approval: all (True), none (False), a function of the
listed tool, or None for the tool's own hints (``destructiveHint`` asks, ``readOnlyHint``
does not, no hint does not)."""

_NOT_A_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def model_name(name: str, prefix: str | None) -> str:
    """The name a model calls an MCP tool by: prefixed, and only the characters every
    provider accepts in a function name (``[a-zA-Z0-9_-]``)."""
    full = f"{prefix}_{name}" if prefix else name
    return _NOT_A_NAME.sub("_", full)[:64]


def needs_approval(tool: types.Tool, rule: ApprovalRule) -> ApprovalPolicy:
    """The approval policy of an MCP tool under a server's rule.

    With no rule, the hints decide as the MCP spec defines them: ``readOnlyHint`` never
    asks; otherwise ``destructiveHint`` asks, and its spec default (true) applies to a
    tool that declares itself a writer (``readOnlyHint: false``) without saying more. A
    tool that gives no behaviour hints at all is not assumed destructive: most servers
    annotate nothing, and asking for every call of theirs would teach users to click yes.
    """
    if isinstance(rule, bool):
        return rule
    if rule is not None:
        return bool(rule(tool))
    hints = tool.annotations
    if hints is None or hints.read_only_hint:
        return False
    if hints.destructive_hint is not None:
        return hints.destructive_hint
    return hints.read_only_hint is False


def idempotent(tool: types.Tool) -> bool:
    """Whether a call interrupted mid-way (a server restart) may simply run again:
    ``idempotentHint``, or ``readOnlyHint`` (a call that changes nothing can be repeated;
    the spec gives ``idempotentHint`` meaning only for tools that write)."""
    hints = tool.annotations
    return hints is not None and bool(hints.read_only_hint or hints.idempotent_hint)


def to_tool(
    tool: types.Tool, name: str, executor: Executor, rule: ApprovalRule, timeout: float | None
) -> Tool | None:
    """The listed MCP tool as a callwright tool, or None (logged) when its schema is one a
    model cannot be shown or callwright cannot check in bounded time."""
    schema = tool.input_schema
    if schema.get("type") != "object":
        log.warning("MCP tool %r skipped: its input schema is not an object", tool.name)
        return None
    title = tool.title or (tool.annotations.title if tool.annotations else None)
    try:
        made = Tool.from_schema(
            {"name": name, "description": tool.description or "", "parameters": schema},
            executor=executor,
            requires_approval=needs_approval(tool, rule),
            timeout=timeout,
            idempotent=idempotent(tool),
        )
    except Exception as exc:  # a schema the validator refuses: the rest of the server still works
        log.warning("MCP tool %r skipped: %s", tool.name, exc)
        return None
    made.title = title
    made.output_schema = tool.output_schema
    return made


def to_result(result: types.CallToolResult) -> ToolResult:
    """The model's text and the UI's output of a finished call; raises ``ToolError`` for
    an ``isError`` result."""
    text, rich = _read(result.content)
    if result.is_error:
        raise ToolError(text or "The MCP tool reported an error.")
    files = [f for f in map(as_file, result.content) if f is not None]
    details = {"content": rich} if rich else None
    if result.structured_content is not None:
        return ToolResult(result.structured_content, details, text or None, files=files)
    return ToolResult(text, details, files=files)


def as_file(block: types.ContentBlock) -> FilePart | None:
    """An image, audio or blob resource block as a file the model can be shown; None for
    the others (text, links: the text names them)."""
    if isinstance(block, types.ImageContent | types.AudioContent):
        return FilePart(block.mime_type, data=block.data)
    if isinstance(block, types.EmbeddedResource):
        inner = block.resource
        if isinstance(inner, types.BlobResourceContents) and inner.mime_type:
            return FilePart(inner.mime_type, data=inner.blob, filename=_last_segment(inner.uri))
    return None


def _last_segment(uri: Any) -> str | None:
    name = str(uri).rstrip("/").rpartition("/")[2]
    return name or None


def from_files(files: list[FilePart]) -> list[types.ContentBlock]:
    """A callwright result's files as MCP blocks: images and audio as their own blocks,
    anything else inline as an embedded blob resource, a URL file as a resource link."""
    blocks: list[types.ContentBlock] = []
    for f in files:
        if f.url is not None:
            name = f.filename or _last_segment(f.url) or "file"
            blocks.append(types.ResourceLink(uri=f.url, name=name, mime_type=f.media_type))
        elif f.top_type == "image":
            blocks.append(types.ImageContent(data=f.data or "", mime_type=f.media_type))
        elif f.top_type == "audio":
            blocks.append(types.AudioContent(data=f.data or "", mime_type=f.media_type))
        else:
            uri = f"callwright:file/{f.filename or 'file'}"
            blob = types.BlobResourceContents(uri=uri, blob=f.data or "", mime_type=f.media_type)
            blocks.append(types.EmbeddedResource(resource=blob))
    return blocks


def _read(blocks: list[types.ContentBlock]) -> tuple[str, list[dict[str, Any]]]:
    """The blocks as one text, and the ones text cannot carry, as JSON for UIs (the files
    among them also travel as the result's files)."""
    lines: list[str] = []
    rich: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, types.TextContent):
            lines.append(block.text)
            continue
        rich.append(block.model_dump(mode="json", by_alias=True, exclude_none=True))
        if isinstance(block, types.ImageContent | types.AudioContent):
            lines.append(f"[{block.type}: {block.mime_type}]")
        elif isinstance(block, types.ResourceLink):
            lines.append(f"[resource: {block.uri}]")
        elif isinstance(block, types.EmbeddedResource):
            inner = block.resource
            if isinstance(inner, types.TextResourceContents):
                lines.append(inner.text)
            else:
                lines.append(f"[resource: {inner.uri}]")
    return "\n".join(lines), rich


def progress_text(progress: float, total: float | None, message: str | None) -> str:
    """A status line for an MCP progress notification."""
    if message:
        return message
    if total:
        return f"{progress:g}/{total:g}"
    return f"{progress:g}"


def fraction(progress: float, total: float | None) -> float | None:
    """How far along, from 0 to 1, when the server says out of how much."""
    if not total or total <= 0:
        return None
    return max(0.0, min(1.0, progress / total))
