"""AG-UI protocol versions: what the client declared decides the fields it is sent."""

from __future__ import annotations

from typing import Any

from ._base import major_version


def wants_protocol_1(body: Any) -> bool:
    """Whether the client declared ``protocolVersion`` 1 or later (and so accepts 1.0-only
    fields). Clients before 1.0 send no version at all."""
    version = body.get("protocolVersion") if isinstance(body, dict) else None
    major = major_version(version) if isinstance(version, str) else None
    return major is not None and major >= 1


SPOKEN = ("1.0", "1.1")
"""The AG-UI versions callwright speaks, oldest first."""


def protocol_version(body: Any) -> str | None:
    """The version to declare on ``RUN_STARTED``: the newest one spoken that is not newer
    than the client's ``protocolVersion`` (a 1.0 client gets 1.0, a 1.4 or 2.0 one 1.1).
    None for a client that declared none, or one before 1.0: it has no such field."""
    declared = body.get("protocolVersion") if isinstance(body, dict) else None
    if not isinstance(declared, str) or not wants_protocol_1(body):
        return None
    parts = declared.strip().lstrip("v").split(".")
    wanted = (
        major_version(declared) or 0,
        int(parts[1]) if parts[1:2] and parts[1].isdecimal() else 0,
    )
    usable = [v for v in SPOKEN if tuple(int(p) for p in v.split(".")) <= wanted]
    return usable[-1] if usable else None


CONTENT_PARTS_SINCE = "1.1"
"""The first version whose ``TOOL_CALL_RESULT.content`` may be a list of content parts."""


def has_content_parts(version: str | None) -> bool:
    """Whether a stream declared as ``version`` (``protocol_version(body)``) may carry a
    tool's result as content parts; earlier clients read ``content`` as a string."""
    return version in SPOKEN and SPOKEN.index(version) >= SPOKEN.index(CONTENT_PARTS_SINCE)
