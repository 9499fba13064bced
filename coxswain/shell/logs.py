"""The process's own log: one JSON object a line in containers, readable text on a terminal.

Every long-running command (``proxy``, ``serve``, ``controller``) calls :func:`install_logging`
once. The form follows where standard error goes: a terminal gets ``HH:MM:SS level logger:
message``; anything else (a container runtime, a file, a pipe) gets JSON lines with ``time``
(RFC 3339, UTC), ``level``, ``logger``, ``message`` and, for an exception, ``error``, as log
collectors (Loki, Cloud Logging, Elasticsearch) parse without configuration. ``COXSWAIN_LOG_FORMAT``
(``json`` or ``text``) overrides the guess. The access log is separate (:mod:`.access_log`).
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import sys
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TextIO

__all__ = ["FORMAT_ENV", "JsonFormatter", "install_logging"]

FORMAT_ENV: Final = "COXSWAIN_LOG_FORMAT"


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
        line: dict[str, object] = {
            "time": stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, separators=(",", ":"))


def install_logging(
    stream: TextIO | None = None, *, json_lines: bool | None = None
) -> Callable[[], None]:
    """Send the ``coxswain`` loggers to ``stream`` (default: standard error) at INFO, in the
    form that suits it; returns an undo (for tests)."""
    stream = stream or sys.stderr
    if json_lines is None:
        wanted = os.environ.get(FORMAT_ENV, "").lower()
        json_lines = wanted == "json" or (wanted != "text" and not stream.isatty())
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        JsonFormatter()
        if json_lines
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
    )
    root = logging.getLogger("coxswain")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return lambda: root.removeHandler(handler)
