"""A run's own model settings on its ``runs`` row (``runs.settings``, JSON).

Per-run settings are kept so that the run's later segments (resumed after an approval,
continued by another process) ask the model as its first segment did, not with the
agent's settings. Written once per request that gives them, read with each segment.
"""

from __future__ import annotations

import json

import pydantic_core

from .._errors import ConfigurationError
from ..models._settings import ModelSettings
from ._sql import Db


def settings_json(settings: ModelSettings) -> str:
    """The settings as the journal stores them; ``extra`` values must be JSON (or
    objects pydantic can write as JSON, such as an SDK's config types)."""
    try:
        return pydantic_core.to_json(settings.to_dict()).decode()
    except pydantic_core.PydanticSerializationError:
        raise ConfigurationError(
            "a journaled run's ModelSettings.extra must hold JSON values: "
            "one of its values cannot be written as JSON"
        ) from None


def read_settings(db: Db, run_id: str) -> ModelSettings | None:
    row = db.execute("SELECT settings FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None or row[0] is None:
        return None
    return ModelSettings.from_dict(json.loads(row[0]))


def keep_settings(
    db: Db, run_id: str, settings: ModelSettings | None, *, new_run: bool
) -> ModelSettings | None:
    """The run's settings after this request: ``settings`` over those it had (written),
    or those it had. A new run had none: nothing is read (no round trip on Postgres)."""
    kept = None if new_run else read_settings(db, run_id)
    if settings is None:
        return kept
    merged = settings if kept is None else kept.merged(settings)
    db.write("UPDATE runs SET settings = ? WHERE id = ?", (settings_json(merged), run_id))
    return merged
