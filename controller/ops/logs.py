"""Structured logs: one JSON object per line (time, level, logger, message, then the record's
fields), with secrets redacted before anything is written.

Log aggregators on a cluster parse one object per line; free text with a token pasted into it
would be both unparseable and a leak. Fields are passed the standard way,
`log.info("status written", extra={"resourceVersion": rv})`; any key that names a secret
(`token`, `authorization`, `password`, ...) is replaced, and so is a bearer token in the text.

Python warnings become log records too (a library's `warnings.warn` would otherwise print two
lines of free text to stderr); urllib3's warning for a request made without verifying the
server's certificate (`insecure-skip-tls-verify`), issued on every request, is told once per
host.

urllib3 warns on each of its immediate retries of a refused connection, three lines per call
while an API server is away; those lines are dropped, because the loops that make the calls tell
an outage once when it starts and once when it ends, and count the tries in the metrics.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import IO, Any

__all__ = [
    "REDACTED",
    "DropClientRetries",
    "JsonFormatter",
    "RedactSecrets",
    "configure_logging",
    "redact",
]

REDACTED = "[REDACTED]"

# Attributes every LogRecord has; anything else on a record came from `extra=` and is a field.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}
_SECRET_KEY = re.compile(
    r"token|authorization|password|passwd|secret|api[_-]?key|credential|cookie", re.IGNORECASE
)
# `Bearer abc.def`, `token=abc`, `"password": "abc"` inside free text. A bearer value runs to
# the next space or quote: an escaped line break (`\n` in a repr) does not end it.
_SECRET_TEXT = (
    re.compile(r"(?i)\b(bearer)\s+[^\s\"']+"),
    re.compile(r"(?i)\b(token|authorization|password|api[_-]?key)(\"?\s*[:=]\s*\"?)([^\s\",;&]+)"),
)
# Chatty libraries whose debug output can carry request headers.
_QUIET = ("kubernetes", "urllib3", "transitions")


def redact(value: Any, *, key: str = "") -> Any:
    """`value` with every secret replaced: by its key's name, or by its look in free text."""
    if key and _SECRET_KEY.search(key):
        return REDACTED
    if isinstance(value, str):
        return _redact_text(value)
    if isinstance(value, Mapping):
        return {str(k): redact(v, key=str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def _redact_text(text: str) -> str:
    text = _SECRET_TEXT[0].sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _SECRET_TEXT[1].sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


class RedactSecrets(logging.Filter):
    """Rewrites a record in place so that no handler, JSON or not, ever sees a secret."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = _redact_text(record.getMessage())
        record.args = None
        for name, value in list(vars(record).items()):
            if name not in _STANDARD:
                setattr(record, name, redact(value, key=name))
        return True


class DropClientRetries(logging.Filter):
    """Drops urllib3's per-retry warning (`Retrying (Retry(total=2, ...)) after connection
    broken by ...`); the caller's own outage lines say the same once."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            record.name == "urllib3.connectionpool" and str(record.msg).startswith("Retrying (")
        )


class JsonFormatter(logging.Formatter):
    """`{"time": ..., "level": ..., "logger": ..., "message": ..., <fields>}` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": _redact_text(record.getMessage()),
        }
        for name, value in vars(record).items():
            if name not in _STANDARD and name not in out:
                out[name] = redact(value, key=name)
        if record.exc_info:
            out["error"] = _redact_text(self.formatException(record.exc_info))
        return json.dumps(out, default=str, ensure_ascii=False)


def configure_logging(level: str = "info", *, stream: IO[str] | None = None) -> logging.Handler:
    """Route every logger to one JSON handler on `stream` (stderr by default).

    Returns the handler so that a test (or a second `run` in one process) can remove it.
    """
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(DropClientRetries())
    handler.addFilter(RedactSecrets())
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h.formatter, JsonFormatter)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in _QUIET:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    warnings.showwarning = _log_warning
    warnings.filterwarnings("once", message="Unverified HTTPS request")
    return handler


def _log_warning(  # noqa: PLR0917 (warnings.showwarning's signature)
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: IO[str] | None = None,
    line: str | None = None,
) -> None:
    """`warnings.showwarning` as a record of the `py.warnings` logger (as
    `logging.captureWarnings` names it), so that it goes out as one JSON object."""
    logging.getLogger("py.warnings").warning(
        "%s: %s", category.__name__, message, extra={"source": f"{filename}:{lineno}"}
    )
