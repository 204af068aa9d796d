"""Files and images a tool returns: ``File``, and a return value split into text and files.

A tool returns a ``File`` (or a ``FilePart``) alone, or in a list beside text. The
files travel as ``FilePart``s, the type user messages already carry, so every model
adapter turns them into its provider's parts the way it does a user's files. They
are checked here, where the tool's value becomes its result: a malformed file or one
over the limits is an error result the model sees, never a crash and never a journal
row too large to keep.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .call import ToolError, to_model_text
from .messages import FilePart

MAX_TOOL_FILE_BYTES = 4 * 1024 * 1024
"""The default of ``Limits.max_tool_file_bytes``: the most bytes (decoded) the files of
one tool result may hold together."""
MAX_TOOL_FILES = 10
"""The most files one tool result may carry."""
MAX_URL_LENGTH = 8192
"""The longest URL a returned file may name."""


@dataclass(slots=True)
class File:
    """An image, audio clip or document a tool returns, for the model and the UI to see.

    ``File(png_bytes, "image/png")`` or ``File(url="https://...", media_type="image/png")``;
    return it alone or in a list with text: ``["Here is the chart", File(png, "image/png")]``.
    """

    data: bytes | None = None
    """The file's bytes; None for a URL file."""
    media_type: str = ""
    """The IANA media type (``image/png``, ``application/pdf``, ``audio/wav`` ...)."""
    url: str | None = None
    """An https URL the model provider fetches itself; callwright never fetches it."""
    filename: str | None = None
    """A name for UIs and the providers that take one; None for none."""

    def __post_init__(self) -> None:
        if (self.data is None) == (self.url is None):
            raise ValueError("a File needs exactly one of data and url")

    def part(self) -> FilePart:
        """The file as the message part the model adapters read."""
        if self.data is not None:
            return FilePart.from_bytes(self.data, self.media_type, self.filename)
        return FilePart(self.media_type, url=self.url, filename=self.filename)


def is_file(value: Any) -> bool:
    """Whether a tool's value (or an item of its list) is a file rather than text."""
    return isinstance(value, File | FilePart)


def split_files(
    value: Any, max_bytes: int = MAX_TOOL_FILE_BYTES
) -> tuple[Any, list[FilePart]] | None:
    """``(text, files)`` for a value that holds files, else None (a plain result).

    A list's other items become text lines, strings as they are and anything else as
    JSON, in the order the tool gave them.
    """
    if is_file(value):
        return "", checked_files([value], max_bytes)
    if not isinstance(value, list) or not any(is_file(v) for v in value):
        return None
    text = "\n".join(to_model_text(v) for v in value if not is_file(v))
    return text, checked_files([v for v in value if is_file(v)], max_bytes)


def checked_files(values: list[Any], max_bytes: int = MAX_TOOL_FILE_BYTES) -> list[FilePart]:
    """The parts of ``values``, each well formed and all within the limits, ``max_bytes``
    decoded bytes together (a ``ToolError`` naming the first problem otherwise)."""
    if len(values) > MAX_TOOL_FILES:
        raise ToolError(f"the tool returned {len(values)} files; at most {MAX_TOOL_FILES} fit")
    parts = [v.part() if isinstance(v, File) else v for v in values]
    total = 0
    for i, part in enumerate(parts):
        total += _check(part, f"file {i}")
        if total > max_bytes:
            raise ToolError(
                f"the tool's files hold {total:,} bytes or more; "
                f"at most {max_bytes:,} fit in one result"
            )
    return parts


def _check(part: Any, where: str) -> int:
    """The part's decoded size, once it is known to be well formed."""
    if not isinstance(part, FilePart):
        raise ToolError(f"{where} is not a File")
    kind = part.media_type
    top, slash, sub = kind.partition("/")
    if not top or (part.data is not None and not (slash and sub)) or " " in kind:
        raise ToolError(f"{where}: {kind[:64]!r} is not a media type (e.g. image/png)")
    if part.url is not None:
        if len(part.url) > MAX_URL_LENGTH:
            raise ToolError(f"{where}: the url is longer than {MAX_URL_LENGTH} characters")
        url = urlsplit(part.url)
        if url.scheme.lower() != "https" or not url.netloc:
            raise ToolError(f"{where}: a file's url must be https")
        return 0
    try:
        return len(base64.b64decode(part.data or "", validate=True))
    except (binascii.Error, ValueError):
        raise ToolError(f"{where}: the data is not valid base64") from None


def stand_in(part: FilePart) -> str:
    """The line a model that cannot see a file reads in its place."""
    name = f" {part.filename!r}" if part.filename else ""
    where = f" at {part.url}" if part.url is not None else ""
    return f"[the tool returned a {part.media_type or 'file'} file{name}{where}, not shown here]"


def file_to_dict(part: FilePart) -> dict[str, Any]:
    """A part as JSON for journals and durable workflow outputs (Nones left out)."""
    data = {"media_type": part.media_type, "data": part.data, "url": part.url}
    data["filename"] = part.filename
    return {k: v for k, v in data.items() if v is not None}


def file_from_dict(data: dict[str, Any]) -> FilePart:
    """The part ``file_to_dict`` wrote."""
    return FilePart(data["media_type"], data.get("data"), data.get("url"), data.get("filename"))


def with_stand_ins(text: str, files: list[FilePart]) -> str:
    """A tool result's text with a stand-in line per file, for a model that sees no files."""
    return "\n".join([text, *(stand_in(f) for f in files)]) if files else text


def label(part: FilePart) -> str:
    """A file named in one line, for a client or a terminal that shows only text."""
    name = f" {part.filename}" if part.filename else ""
    return f"[{part.media_type or 'file'}{name}]"


def with_labels(text: str, files: list[FilePart]) -> str:
    """A result's text with a line naming each of its files."""
    return "\n".join([text, *map(label, files)] if text else map(label, files))
