"""Where artifacts live: the ``ArtifactStore`` protocol and its filesystem default.

A store keeps bytes under ids it makes itself (``art_`` and 32 hex digits): no name a
model or a client sends is ever joined to a path, and a string that is not such an id
is "not found" before anything is opened. Each artifact remembers whose it is (the
principal, the thread and the run that made it); the store does not check that, its
callers do (the built-in tool and the download endpoint), so that a forged id, a
foreign one and an unknown one all get the same answer.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

ID_PATTERN = re.compile(r"art_[0-9a-f]{32}")
"""What every artifact id looks like; anything else is unknown without a look-up."""


def new_artifact_id() -> str:
    """Unguessable: knowing one id tells nothing about another."""
    return "art_" + secrets.token_hex(16)


def is_artifact_id(value: object) -> bool:
    """Whether ``value`` has the shape of an artifact id (and so may be looked up)."""
    return isinstance(value, str) and ID_PATTERN.fullmatch(value) is not None


@dataclass(frozen=True, slots=True)
class ArtifactInfo:
    """What a store knows about one artifact besides its bytes."""

    id: str
    """``art_`` and 32 hex digits, made by the store."""
    owner: str
    """The principal whose run made it (``""`` for a run without one)."""
    thread_id: str
    """The thread whose run made it: the model may read it in any run of that thread."""
    run_id: str
    """The run that made it: the download link names it."""
    call_id: str
    """The call whose result it is."""
    tool_name: str
    """The tool that produced it."""
    size: int
    """Its length in bytes (UTF-8 text)."""
    lines: int
    """How many lines it has (a last line without a newline counts)."""
    media_type: str
    """``text/plain`` for a text result, ``application/json`` for a structured one."""
    created_at: float
    """When it was stored (seconds since the epoch)."""
    expires_at: float
    """When it is deleted (seconds since the epoch); after that it is not found."""


@runtime_checkable
class ArtifactStore(Protocol):
    """Keeps artifacts' bytes. Methods block (files, a database): callers run them in a
    worker thread, never on the event loop. ``search`` is the same function of ``read``
    for every store (``search_lines``); it is here so that a store holding its bytes
    elsewhere can search where they are."""

    def put(self, info: ArtifactInfo, data: bytes) -> None:
        """Keep ``data`` under ``info.id`` (an id from ``new_artifact_id``)."""
        ...

    def get(self, artifact_id: str, now: float | None = None) -> ArtifactInfo | None:
        """The artifact's info; None when unknown, expired at ``now`` (default: the
        clock), or not an artifact id at all."""
        ...

    def read(self, artifact_id: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes ``start:end`` of the artifact (all of it by default); ``b""`` when unknown."""
        ...

    def delete(self, artifact_id: str) -> None:
        """Forget the artifact (nothing happens for an unknown one)."""
        ...

    def expire(self, now: float | None = None) -> int:
        """Delete the artifacts expired at ``now`` (default: the clock); how many."""
        ...


class FileArtifactStore:
    """Artifacts as files in one directory: ``<id>.bin`` (the bytes) and ``<id>.json``
    (the info). The default store; ``directory`` defaults to a fresh private temporary
    directory (artifacts then last as long as the process). Pass a directory of your
    own to keep them across restarts; it is made with mode 0700."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        if directory is None:
            directory = tempfile.mkdtemp(prefix="callwright-artifacts-")
        self.directory = Path(directory)
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def _path(self, artifact_id: str, suffix: str) -> Path | None:
        if not is_artifact_id(artifact_id):
            return None
        return self.directory / f"{artifact_id}{suffix}"

    def put(self, info: ArtifactInfo, data: bytes) -> None:
        """Write the bytes first and the info last (under a temporary name, then renamed):
        an artifact is found only once it is whole."""
        blob, meta = self._path(info.id, ".bin"), self._path(info.id, ".json")
        if blob is None or meta is None:
            raise ValueError("not an artifact id")
        blob.write_bytes(data)
        partial = meta.with_suffix(".json.part")
        partial.write_text(json.dumps(asdict(info)))
        partial.replace(meta)

    def get(self, artifact_id: str, now: float | None = None) -> ArtifactInfo | None:
        meta = self._path(artifact_id, ".json")
        if meta is None:
            return None
        try:
            info = ArtifactInfo(**json.loads(meta.read_text()))
        except (OSError, ValueError, TypeError):
            return None
        return info if info.expires_at > (time.time() if now is None else now) else None

    def read(self, artifact_id: str, start: int = 0, end: int | None = None) -> bytes:
        blob = self._path(artifact_id, ".bin")
        if blob is None:
            return b""
        try:
            with blob.open("rb") as file:
                file.seek(max(start, 0))
                return file.read() if end is None else file.read(max(end - max(start, 0), 0))
        except OSError:
            return b""

    def delete(self, artifact_id: str) -> None:
        for suffix in (".json", ".bin"):
            path = self._path(artifact_id, suffix)
            if path is not None:
                path.unlink(missing_ok=True)

    def expire(self, now: float | None = None) -> int:
        moment = time.time() if now is None else now
        gone = 0
        with self._lock:
            for meta in self.directory.glob("art_*.json"):
                artifact_id = meta.name.removesuffix(".json")
                info = self.get(artifact_id, now=float("-inf"))
                if info is None or info.expires_at <= moment:
                    self.delete(artifact_id)
                    gone += 1
        return gone
