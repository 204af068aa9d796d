"""Artifacts: tool results too large for the model's context, stored with a preview.

``Agent(artifacts=Artifacts())`` turns every result over ``Artifacts.threshold``
(32 KiB of text by default) into an artifact: the model gets its beginning and end
and a handle it passes to the built-in ``read_artifact`` tool to read lines, bytes or
a search; front ends get the same preview and a download path
(``GET /runs/{run_id}/artifacts/{artifact_id}``, owner-only). See
docs/guides/artifacts.md.
"""

from ._journal import JournalArtifactStore
from ._offload import TOOL_NAME, Artifacts, RunArtifacts, download_path, preview
from ._store import (
    ArtifactInfo,
    ArtifactStore,
    FileArtifactStore,
    is_artifact_id,
    new_artifact_id,
)

__all__ = [
    "TOOL_NAME",
    "ArtifactInfo",
    "ArtifactStore",
    "Artifacts",
    "FileArtifactStore",
    "JournalArtifactStore",
    "RunArtifacts",
    "download_path",
    "is_artifact_id",
    "new_artifact_id",
    "preview",
]
