"""A tool result's files on the wire: AI SDK tool-output content, AG-UI content parts.

The AI SDK has a content output for tools (``{"type": "content", "value": [...]}``,
what a tool's ``toModelOutput`` returns); its file part is spelled differently by each
major version: ai 5 ``media``, ai 6 ``file-data``/``file-url``, ai 7 ``file`` with tagged
data. A client reads ``output`` as any JSON, so each version gets its own spelling and
the decoder reads all three back.

AG-UI 1.1's ``TOOL_CALL_RESULT.content`` may be a list of content parts (``text``,
``image``, ``audio``, ``video``, ``document`` with a ``data`` or ``url`` source): a
client that declared 1.1 gets the text and the files as parts. For earlier clients it
is a string, so the files go beside it, as the same parts under
``metadata.callwright.files``, and the content names each file in a line of its own.
"""

from __future__ import annotations

from typing import Any

from .._tool_files import checked_files, label
from ..call import ToolError
from ..messages import FilePart
from ._base import Payload
from ._common import WireError

AGUI_KINDS = {"image": "image", "audio": "audio", "video": "video"}
"""AG-UI's part type for a top-level media type; anything else is a ``document``."""
AGUI_PART_TYPES = frozenset({*AGUI_KINDS.values(), "document"})


def agui_part(part: FilePart) -> Payload:
    """A file as an AG-UI content part."""
    source: Payload
    if part.data is not None:
        source = {"type": "data", "value": part.data, "mimeType": part.media_type}
    else:
        source = {"type": "url", "value": part.url, "mimeType": part.media_type}
    payload: Payload = {"type": AGUI_KINDS.get(part.top_type, "document"), "source": source}
    if part.filename:
        payload["metadata"] = {"filename": part.filename}
    return payload


def aisdk_output(text: str, files: list[FilePart], version: int) -> Payload:
    """A tool's output as the AI SDK's content output, in the client's version."""
    value: list[Payload] = [{"type": "text", "text": text}] if text else []
    value += [aisdk_part(f, version) for f in files]
    return {"type": "content", "value": value}


def aisdk_part(part: FilePart, version: int) -> Payload:
    """One file as a tool-output content part of ai ``version``."""
    named: Payload = {"filename": part.filename} if part.filename else {}
    if version >= 7:
        data: Payload = (
            {"type": "data", "data": part.data}
            if part.data is not None
            else {"type": "url", "url": part.url}
        )
        return {"type": "file", "data": data, "mediaType": part.media_type, **named}
    if part.data is not None and version == 6:
        return {"type": "file-data", "data": part.data, "mediaType": part.media_type, **named}
    if part.data is not None:
        return {"type": "media", "data": part.data, "mediaType": part.media_type}
    if version == 6:
        return {"type": "file-url", "url": part.url, "mediaType": part.media_type}
    return {"type": "text", "text": f"{label(part)} {part.url}"}  # ai 5 has no URL part


def aisdk_files_back(output: Any) -> tuple[str, list[FilePart]] | None:
    """A content output a client sent back (any version's spelling) as text and files;
    None for any other output. Parts that are neither text nor a file are left out; a
    malformed or oversized file is a 400 ``invalid_file``, as a tool's own would be an
    error result."""
    if not isinstance(output, dict) or output.get("type") != "content":
        return None
    value = output.get("value")
    if not isinstance(value, list):
        return None
    texts: list[str] = []
    files: list[FilePart] = []
    for item in value:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "text" and isinstance(item.get("text"), str):
            texts.append(item["text"])
            continue
        part = _file_back(item)
        if part is not None:
            files.append(part)
    try:
        return "\n".join(texts), checked_files(files)
    except ToolError as exc:
        raise WireError(f"a tool output's file: {exc.message}", "invalid_file") from None


def agui_files_back(content: Any) -> list[FilePart]:
    """The files of a tool message a 1.1 client sent back, its content a part list: its
    media parts with a ``data`` or ``url`` source, held to a tool's own limits (as the
    tool's result was, so what was sent comes back), not to a user message's. Other
    parts (text, a provider file handle) are left out; a malformed or oversized file is a
    400 ``invalid_file``."""
    if not isinstance(content, list):
        return []
    files: list[FilePart] = []
    for item in content:
        if isinstance(item, dict) and item.get("type") in AGUI_PART_TYPES:
            part = _agui_file_back(item)
            if part is not None:
                files.append(part)
    try:
        return checked_files(files)
    except ToolError as exc:
        raise WireError(f"a tool result's file: {exc.message}", "invalid_file") from None


def _agui_file_back(item: dict[str, Any]) -> FilePart | None:
    source = item.get("source")
    if not isinstance(source, dict):
        return None
    kind, value, media_type = source.get("type"), source.get("value"), source.get("mimeType")
    metadata = item.get("metadata")
    name = metadata.get("filename") if isinstance(metadata, dict) else None
    name = name if isinstance(name, str) and name else None
    if not isinstance(media_type, str) or not media_type or not isinstance(value, str):
        return None
    if kind == "data" and value:
        return FilePart(media_type, data=value, filename=name)
    if kind == "url" and value:
        return FilePart(media_type, url=value, filename=name)
    return None


def _file_back(item: dict[str, Any]) -> FilePart | None:
    kind, media_type = item.get("type"), item.get("mediaType")
    name = item.get("filename") if isinstance(item.get("filename"), str) else None
    if not isinstance(media_type, str) or not media_type:
        return None
    data: Any = None
    url: Any = None
    if kind in ("media", "file-data"):
        data = item.get("data")
    elif kind == "file-url":
        url = item.get("url")
    elif kind == "file" and isinstance(item.get("data"), dict):
        tagged = item["data"]
        data = tagged.get("data") if tagged.get("type") == "data" else None
        url = tagged.get("url") if tagged.get("type") == "url" else None
    if isinstance(data, str) and data:
        return FilePart(media_type, data=data, filename=name)
    if isinstance(url, str) and url:
        return FilePart(media_type, url=url, filename=name)
    return None
