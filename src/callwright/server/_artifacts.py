"""Serving an artifact's bytes to the principal whose run made it.

Everything that could tell an artifact exists is answered the same way (None, which
the handler turns into one 404): artifacts off, an id of the wrong shape, an unknown
or expired id, another principal's, or one the path's run did not make. The store is
read in a worker thread.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ..artifacts import Artifacts, is_artifact_id


@dataclass(frozen=True, slots=True)
class FoundArtifact:
    """An artifact's bytes and how to send them."""

    data: bytes
    media_type: str
    headers: dict[str, str]


async def serve_artifact(
    config: Artifacts | None, run_id: str, artifact_id: str, principal: str
) -> FoundArtifact | None:
    """The artifact ``artifact_id`` of run ``run_id`` if ``principal`` owns it, else None."""
    if config is None or not is_artifact_id(artifact_id):
        return None
    store = config.the_store()
    info = await asyncio.to_thread(store.get, artifact_id)
    if info is None or info.owner != principal or info.run_id != run_id:
        return None
    data = await asyncio.to_thread(store.read, artifact_id)
    extension = "json" if info.media_type == "application/json" else "txt"
    headers = {
        "content-disposition": f'attachment; filename="{artifact_id}.{extension}"',
        "cache-control": "private, no-store",
    }
    media_type = f"{info.media_type}; charset=utf-8"
    return FoundArtifact(data, media_type, headers)
