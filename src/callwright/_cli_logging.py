"""``--log-level`` and ``--log-format``: the commands' logging, on stderr.

One ``logging.config.dictConfig`` dictionary serves the command and uvicorn
(``log_config=``), so the server's own lines (startup, access, errors) look like
callwright's run lines (``callwright.telemetry._log``), in every process of
``serve --processes N``. ``json`` writes one object per line for log shippers: the
record's time, level, logger and message, and the fields the line carries (``run_id``,
``thread_id``, ``call_id``, ``tool_name``, ``status``, ``duration_ms`` ...).
"""

from __future__ import annotations

import json
import logging
import logging.config
from datetime import UTC, datetime
from typing import Any

_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",  # uvicorn's coloured copy of the message
    "taskName",
}

TEXT_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``time`` (UTC, ISO 8601), ``level``, ``logger``,
    ``message``, ``pid`` (``serve --processes N`` logs from N), the record's ``extra=``
    fields, and ``exception`` when it has one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_") and key not in line:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def logging_config(level: str = "info", fmt: str = "text") -> dict[str, Any]:
    """The ``dictConfig`` dictionary: every logger (root, uvicorn's) to one stderr handler.

    ``level`` is callwright's and uvicorn's; other libraries show warnings and errors
    only (an HTTP client's INFO line per model request is noise), all of it at ``debug``.
    """
    shown = level.upper()
    others = shown if shown in ("DEBUG", "ERROR") else "WARNING"
    formatters: dict[str, Any] = {
        "text": {"format": TEXT_FORMAT},
        "json": {"()": f"{__name__}.JsonFormatter"},
    }
    uvicorn = {"handlers": ["stderr"], "level": shown, "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {fmt: formatters[fmt]},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": fmt,
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"handlers": ["stderr"], "level": others},
        "loggers": {
            "callwright": {"level": shown},
            "uvicorn": uvicorn,
            "uvicorn.error": {"level": shown},
            "uvicorn.access": uvicorn,
        },
    }


def configure_logging(level: str = "info", fmt: str = "text") -> dict[str, Any]:
    """Apply ``logging_config`` to this process; returns it (for uvicorn's ``log_config``)."""
    config = logging_config(level, fmt)
    logging.config.dictConfig(config)
    return config
