"""Logging of the long-running commands (``pykai run``, ``pykai webhook``): text lines, or one
JSON object per line (``--log-format json``; keys ts, level, logger, msg, and exc_info with a
traceback) for log pipelines, as KAI's ``global.jsonLog`` does."""

from __future__ import annotations

import logging

from pykai.cli.options import LogFormat, LogLevel

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
CHATTY = ("httpx", "httpcore")  # a line per request


def configure_logging(level: LogLevel, log_format: LogFormat) -> None:
    """Root logging at ``level`` on stderr, in ``log_format``."""
    from pythonjsonlogger.json import JsonFormatter  # only the long-running commands need it

    handler = logging.StreamHandler()
    if log_format == "json":
        renamed = {"levelname": "level", "name": "logger", "message": "msg"}
        fields = "%(levelname)s %(name)s %(message)s"
        handler.setFormatter(JsonFormatter(fields, rename_fields=renamed, timestamp="ts"))
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    for chatty in CHATTY:
        logging.getLogger(chatty).setLevel(logging.WARNING)
