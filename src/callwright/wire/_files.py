"""Files and images in user messages: both protocols' parts as ``FilePart``s, within limits.

The AI SDK sends a ``file`` part (``mediaType``, ``url`` as a ``data:`` URL or a
hosted URL, ``filename``); AG-UI 1.0 sends media parts (``image``, ``audio``,
``video``, ``document``) whose ``source`` is ``data`` (base64 and ``mimeType``) or
``url``, and older producers a ``binary`` part (``mimeType``, ``data`` or ``url``,
``filename``). Whatever a decoder cannot hand on faithfully is refused with a 4xx
naming the problem, never dropped:

* more than ``FileLimits.max_files`` files in one message: 413 ``too_many_files``;
* a file over ``FileLimits.max_file_bytes`` (decoded): 413 ``file_too_large``;
* a media type outside ``FileLimits.media_types``: 400 ``unsupported_media_type``;
* a malformed ``data:`` URL or base64, a URL that is not https, a provider file
  handle (AG-UI ``file`` source), a part without data or URL: 400 ``invalid_file``.

Except on AG-UI, whose run-input rules say a server must not fail a run for an input
part it cannot use: there a well-formed part of a media type outside the limits, or a
provider file handle, is skipped, and the model is told so by a line added to the
message's text (``SKIPPED``). The size and count limits still answer 413, and a
malformed part still 400.

A hosted URL is handed to the model provider as a URL: the server never fetches it,
so a client cannot make it reach addresses only the server can (SSRF).

``data:`` URLs are parsed here by hand: the standard library's only parser is
``urllib.request``'s ``DataHandler``, which sits behind ``urlopen``, and the grammar
(``data:[<type>][;params][;base64],<payload>``) is one split.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

from ..messages import FilePart
from ._common import WireError

DEFAULT_MEDIA_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "text/plain"}
)
"""What the OpenAI and Anthropic adapters can both hand on: images, PDFs, plain text."""

MAX_URL_LENGTH = 8192
"""The longest hosted URL accepted."""


@dataclass(frozen=True, slots=True)
class FileLimits:
    """What a request may attach to one user message; beyond it, a clear 4xx.

    The server's body limit (``ServerLimits.max_body_bytes``, 4 MiB by default) bounds
    a request first: base64 makes a file a third larger, so raise both together.
    """

    max_file_bytes: int = 2 * 1024 * 1024
    """The largest file, in decoded bytes (413 ``file_too_large`` beyond)."""
    max_files: int = 10
    """The most files one user message may carry (413 ``too_many_files`` beyond)."""
    media_types: frozenset[str] = DEFAULT_MEDIA_TYPES
    """The media types accepted (400 ``unsupported_media_type`` for any other)."""


DEFAULT_FILE_LIMITS = FileLimits()

AGUI_MEDIA = {"image": "image", "audio": "audio", "video": "video", "document": ""}
"""AG-UI's media part types, each with the top-level media type it implies (a document
implies none)."""


def aisdk_files(parts: list[Any], limits: FileLimits) -> list[FilePart]:
    """The ``file`` parts of an AI SDK user message, in order."""
    found = [p for p in parts if isinstance(p, dict) and p.get("type") == "file"]
    _check_count(len(found), limits)
    return [
        file_from_url(p.get("url"), p.get("mediaType"), p.get("filename"), limits, f"file {i}")
        for i, p in enumerate(found)
    ]


SKIPPED = "[{where} was not passed on: {why}]"
"""The line the model reads in place of an AG-UI input part the server skipped."""


def agui_files(content: Any, limits: FileLimits) -> tuple[list[FilePart], list[str]]:
    """The media parts (and legacy ``binary`` parts) of an AG-UI user message, in order,
    and a ``SKIPPED`` line for each part this server cannot use (see the module's doc)."""
    if not isinstance(content, list):
        return [], []
    found = [
        p
        for p in content
        if isinstance(p, dict) and (p.get("type") in AGUI_MEDIA or p.get("type") == "binary")
    ]
    _check_count(len(found), limits)
    files: list[FilePart] = []
    skipped: list[str] = []
    for i, part in enumerate(found):
        where = f"{part['type']} part {i}"
        try:
            files.append(_agui_part(part, limits, where))
        except _Unusable as exc:
            skipped.append(SKIPPED.format(where=where, why=exc.why))
        except WireError as exc:
            if exc.code != "unsupported_media_type":
                raise
            skipped.append(SKIPPED.format(where=where, why=exc.message.split(": ", 1)[-1]))
    return files, skipped


class _Unusable(Exception):
    """A well-formed AG-UI part this server cannot use (skipped, not refused)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _agui_part(part: dict[str, Any], limits: FileLimits, where: str) -> FilePart:
    metadata = part.get("metadata")
    name = metadata.get("filename") if isinstance(metadata, dict) else part.get("filename")
    filename = name if isinstance(name, str) and name else None
    if part["type"] == "binary":  # before 1.0: mimeType with data, url or a bare id
        if part.get("data"):
            return inline_file(part["data"], part.get("mimeType"), filename, limits, where)
        if part.get("url"):
            return file_from_url(part["url"], part.get("mimeType"), filename, limits, where)
        raise _invalid(f"{where} needs data or a url (an id names nothing this server holds)")
    source = part.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if not isinstance(source, dict) or kind not in ("data", "url"):
        if kind == "file":
            raise _Unusable("provider file handles are not accepted; send data or a url")
        raise _invalid(f"{where} needs a source of type data or url")
    if kind == "data":
        return inline_file(source.get("value"), source.get("mimeType"), filename, limits, where)
    media_type = source.get("mimeType") or AGUI_MEDIA[part["type"]]
    return file_from_url(source.get("value"), media_type, filename, limits, where)


def _check_count(count: int, limits: FileLimits) -> None:
    """Counted before any part is decoded, so a flood of parts costs nothing."""
    if count > limits.max_files:
        raise WireError(
            f"a message carries {count} files; at most {limits.max_files} are allowed",
            "too_many_files",
            413,
        )


def file_from_url(
    url: Any, media_type: Any, filename: Any, limits: FileLimits, where: str
) -> FilePart:
    """A part from a URL: a ``data:`` URL becomes inline data, an https URL stays a URL.
    ``media_type`` is what the client declared; a ``data:`` URL's own type fills in a
    missing or bare one, and must agree with a full one."""
    if not isinstance(url, str) or not url:
        raise _invalid(f"{where} needs a url")
    name = filename if isinstance(filename, str) and filename else None
    declared = _normal(media_type)
    if url[:5].lower() == "data:":
        own, data = _data_url(url, where)
        return inline_file(data, _data_type(declared, own, where), name, limits, where)
    if len(url) > MAX_URL_LENGTH:
        raise _invalid(f"{where}: the url is longer than {MAX_URL_LENGTH} characters")
    parts = urlsplit(url)
    if parts.scheme.lower() != "https" or not parts.netloc:
        raise _invalid(
            f"{where}: only data: and https: URLs are accepted (the model provider fetches "
            "a hosted file; this server never does)"
        )
    _check_type(declared, limits, where, url=True)
    return FilePart(declared, url=url, filename=name)


def inline_file(
    data: Any, media_type: Any, filename: str | None, limits: FileLimits, where: str
) -> FilePart:
    """A part from base64 ``data``, checked: its size before decoding, then the base64."""
    if not isinstance(data, str) or not data:
        raise _invalid(f"{where} needs base64 data")
    kind = _normal(media_type)
    padding = len(data) - len(data.rstrip("="))
    size = len(data) * 3 // 4 - padding
    if size > limits.max_file_bytes:  # before the type: a skipped part is still bounded
        raise WireError(
            f"{where}: a file of {size:,} bytes is over the limit of {limits.max_file_bytes:,}",
            "file_too_large",
            413,
        )
    _check_type(kind, limits, where, url=False)
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise _invalid(f"{where}: the data is not valid base64") from None
    return FilePart(kind, data=data, filename=filename)


def _data_url(url: str, where: str) -> tuple[str, str]:
    """A ``data:`` URL's media type and its payload as base64."""
    header, comma, payload = url[5:].partition(",")
    if not comma:
        raise _invalid(f"{where}: a data: URL needs a comma before its data")
    params = [p.strip() for p in header.split(";")]
    media_type = _normal(params[0])
    if len(params) > 1 and params[-1].lower() == "base64":
        return media_type, payload
    raw = unquote_to_bytes(payload)  # the percent-encoded form, e.g. data:,Hello%20world
    return media_type or "text/plain", base64.b64encode(raw).decode("ascii")


def _data_type(declared: str, own: str, where: str) -> str:
    """The type of a ``data:`` URL's payload: the URL's own, which the part's declared
    type may narrow (``image`` to ``image/png``) but not contradict, so the type checked
    against the limits is the one the payload travels under."""
    if not own or own == declared:
        return declared or own
    if not declared or own.startswith(declared + "/"):
        return own
    raise _invalid(f"{where}: the part says {declared[:64]!r} but its data: URL says {own[:64]!r}")


def _normal(media_type: Any) -> str:
    """A media type without parameters, lower case; ``image/*`` is the bare ``image``."""
    if not isinstance(media_type, str):
        return ""
    kind = media_type.split(";", 1)[0].strip().lower()
    return kind[:-2] if kind.endswith("/*") else kind


def _check_type(media_type: str, limits: FileLimits, where: str, *, url: bool) -> None:
    """An accepted type; a bare top-level one (``image``, as ai 7 may send) only for a URL,
    whose response tells the provider the rest."""
    if media_type in limits.media_types:
        return
    bare = "/" not in media_type and any(t.startswith(media_type + "/") for t in limits.media_types)
    if url and media_type and bare:
        return
    allowed = ", ".join(sorted(limits.media_types))
    shown = repr(media_type[:64]) if media_type else "(none)"  # a client's text, kept short
    raise WireError(
        f"{where}: media type {shown} is not accepted (accepted: {allowed})",
        "unsupported_media_type",
    )


def _invalid(message: str) -> WireError:
    return WireError(message, "invalid_file")
