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
