"""Structured logs: one JSON object a line, with the ids a record carries (``COMPARNA_LOG_FORMAT=json``).

Code passes the ids it knows as ``extra={"prediction_id": ..., "target_id": ..., "method_id": ...}``; they
become keys of the line, so a log store can select every line of one prediction, target or method. Standard
library only: the settings' LOGGING names this formatter, and Celery's own handlers get it through
:func:`use_json_formatter` (comparna/celery.py), so workers, beat and the web server write the same lines.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime

# Attributes every LogRecord has: anything else on a record came from ``extra=`` and is written as a key.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}
ID_KEYS = ("prediction_id", "target_id", "method_id", "method_version_id", "dataset_id", "task_id")


def _plain(value):
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON line: time, level, logger, message, the ``extra`` keys, exception."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": record.process,
        }
        task = _current_task()
        if task:
            line.update(task)
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                line[key] = _plain(value)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def _current_task() -> dict:
    """The Celery task being executed in this process, if any (its name and id)."""
    try:
        from celery import current_task
    except ImportError:  # pragma: no cover - Celery is always installed here
        return {}
    task = current_task
    if not task or task.request.id is None:
        return {}
    return {"task": task.name, "task_id": task.request.id}


def json_logs_enabled() -> bool:
    return os.environ.get("COMPARNA_LOG_FORMAT", "json").lower() == "json"


def use_json_formatter(logger: logging.Logger | None = None, **_kwargs) -> None:
    """Give every handler of ``logger`` the JSON formatter (Celery's ``after_setup_*logger`` signals)."""
    if not json_logs_enabled() or logger is None:
        return
    for handler in logger.handlers:
        handler.setFormatter(JsonFormatter())
