"""AI SDK versions: the ``ai`` major version decides the chunks a client is sent."""

from __future__ import annotations

from collections.abc import Mapping

from ._base import major_version
from ._common import WireError

VERSION_HEADER = "x-ai-sdk-version"
SUPPORTED_VERSIONS = (5, 6, 7)
FINISH_REASONS = {
    5: frozenset({"stop", "length", "content-filter", "tool-calls", "error", "other", "unknown"}),
    6: frozenset({"stop", "length", "content-filter", "tool-calls", "error", "other"}),
    7: frozenset(
        {"stop", "length", "content-filter", "tool-calls", "error", "interrupted", "other"}
    ),
}


def client_version(headers: Mapping[str, str], default: int = 6) -> int:
    """The ``ai`` major version from the ``x-ai-sdk-version`` header, else ``default``."""
    raw = headers.get(VERSION_HEADER)
    if raw is None:
        return default
    major = major_version(raw)
    if major not in SUPPORTED_VERSIONS:
        raise WireError(
            f"{VERSION_HEADER} must name ai 5, 6 or 7, not {raw!r}", "unsupported_version"
        )
    return major
