"""Keep MCP secrets out of the log, including what the SDK itself logs.

Our own messages are redacted where they are made. The SDK's loggers (`mcp.*`) log URLs at debug
level and exception texts (which may carry a URL's query) at warning; their records pass through
a handler here that replaces every secret value of every server this process has configured
before handing them to the root handlers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from .config import redact

_secrets: set[str] = set()
_installed = False


def register_secrets(values: Iterable[str]) -> None:
    """Values to hide from now on (kept for the process's life: a log line may come late)."""
    _secrets.update(v for v in values if v)


def scrub(text: str) -> str:
    return redact(text, _secrets)


class _RedactingHandler(logging.Handler):
    """Redacts a record, then gives it to the root logger's handlers (as propagation would)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            clean = logging.makeLogRecord(record.__dict__)
            clean.msg = scrub(record.getMessage())
            clean.args = None
            if record.exc_info:
                text = record.exc_text or logging.Formatter().formatException(record.exc_info)
                clean.exc_text = scrub(text)
                clean.exc_info = None
            for handler in logging.getLogger().handlers:
                if clean.levelno >= handler.level:
                    handler.handle(clean)
        except Exception:  # logging must never break a session
            self.handleError(record)


def install_log_redaction() -> None:
    """Route the SDK's `mcp` logger through the redacting handler (idempotent)."""
    global _installed
    if _installed:
        return
    sdk = logging.getLogger("mcp")
    sdk.addHandler(_RedactingHandler())
    sdk.propagate = False
    _installed = True
