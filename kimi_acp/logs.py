"""Logging to `$KIMI_SHARE_DIR/logs/kimi.log`: never stdout (the protocol), never stderr by default."""

from __future__ import annotations

import logging
import logging.handlers
import os

from .share import share_dir

LOG_FORMAT = "%(asctime)s %(levelname)s %(process)d %(name)s: %(message)s"


def setup_logging(component: str) -> None:
    """Send all records to the rotating log file (5 MiB x 3); level from `KIMI_LOG_LEVEL` (INFO)."""
    root = logging.getLogger()
    if getattr(root, "_kimi_configured", False):
        return
    level = getattr(logging, os.environ.get("KIMI_LOG_LEVEL", "INFO").upper(), logging.INFO)
    handler: logging.Handler
    try:
        directory = share_dir() / "logs"
        directory.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            directory / "kimi.log", maxBytes=5 * 1024 * 1024, backupCount=3, encoding="utf-8", delay=True
        )
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
    except OSError:
        handler = logging.NullHandler()  # no writable share dir: stay silent rather than pollute stdio
    root.addHandler(handler)
    root.setLevel(level)
    # Request lines of the HTTP stack add nothing and could carry query strings.
    for noisy in ("httpx", "httpcore", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    root._kimi_configured = True  # type: ignore[attr-defined]
    logging.getLogger("kimi_acp").info("%s starting (pid %d)", component, os.getpid())
