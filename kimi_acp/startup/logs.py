"""Logging to `$KIMI_SHARE_DIR/logs/kimi.log`: never stdout (the protocol), never stderr by default."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..util import process_state
from ..util.fs import open_private, private_dir, private_share_dir
from ..util.secrets import LogRedaction, register_environment
from ..util.share_dir import share_dir

LOG_FORMAT = "%(asctime)s %(levelname)s %(process)d %(name)s: %(message)s"
MAX_BYTES = 5 * 1024 * 1024
BACKUPS = 3


class RotatingLogFile(logging.FileHandler):
    """`kimi.log`, moved to `kimi.log.1` (and on, up to `.{backups}`) before a record would take it
    past `max_bytes`: logging.handlers.RotatingFileHandler's rule, without importing
    `logging.handlers` (pickle, queue: paid on every server's start-up; figures:
    docs/performance.md, Figures that used to live in the code)."""

    def __init__(self, path: Path, max_bytes: int = MAX_BYTES, backups: int = BACKUPS) -> None:
        super().__init__(path, encoding="utf-8", delay=True)
        self.max_bytes = max_bytes
        self.backups = backups

    def _open(self) -> Any:
        """0600: records can quote prompts, paths and command lines."""
        return open_private(self.baseFilename, self.mode, encoding=self.encoding, errors=self.errors)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self._full_with(record):
                self._rotate()
        except Exception:  # as logging does: a broken log never breaks the server
            self.handleError(record)
            return
        super().emit(record)

    def _full_with(self, record: logging.LogRecord) -> bool:
        base = self.baseFilename
        if os.path.exists(base) and not os.path.isfile(base):
            return False  # e.g. pointed at /dev/null: never rotated
        if self.stream is None:
            self.stream = self._open()
        self.stream.seek(0, os.SEEK_END)
        size = self.stream.tell()
        return size > 0 and size + len(self.format(record)) + 1 >= self.max_bytes

    def _rotate(self) -> None:
        if self.stream is not None:  # always open here: `_full_with` opened it
            self.stream.close()
        self.stream = None
        base = self.baseFilename
        if self.backups > 0:
            for index in range(self.backups - 1, 0, -1):
                if os.path.exists(f"{base}.{index}"):
                    os.replace(f"{base}.{index}", f"{base}.{index + 1}")
            if os.path.exists(base):  # gone if someone deleted it: the new file starts afresh
                os.replace(base, f"{base}.1")
        self.stream = self._open()


NOISY = ("httpx", "httpcore", "asyncio")  # their request lines add nothing and could carry query strings


def _forget_setup() -> Callable[[], None]:
    """process_state's reset: the next `setup_logging` configures this process's log again (a
    server started in a test process logs to its own share dir); the restore removes the handlers
    added since and puts the levels back."""
    root = logging.getLogger()
    noisy = {name: logging.getLogger(name).level for name in NOISY}
    handlers, level = list(root.handlers), root.level
    configured = getattr(root, "_kimi_configured", False)
    root._kimi_configured = False  # type: ignore[attr-defined]

    def restore() -> None:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        root.setLevel(level)
        for name, value in noisy.items():
            logging.getLogger(name).setLevel(value)
        root._kimi_configured = configured  # type: ignore[attr-defined]

    return restore


process_state.register(f"{__name__}.setup_logging", _forget_setup)


def setup_logging(component: str) -> None:
    """Send all records to the rotating log file (5 MiB x 3); level from `KIMI_LOG_LEVEL` (INFO)."""
    root = logging.getLogger()
    if getattr(root, "_kimi_configured", False):
        return
    level = getattr(logging, os.environ.get("KIMI_LOG_LEVEL", "INFO").upper(), logging.INFO)
    handler: logging.Handler
    try:
        directory = share_dir() / "logs"
        private_dir(directory)  # 0700, and so is a share dir created here
        handler = RotatingLogFile(directory / "kimi.log")
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        handler.addFilter(LogRedaction())  # every record, ours and the libraries': no known secret
        register_environment()  # the key variables are known before the first record
    except OSError:
        handler = logging.NullHandler()  # no writable share dir: stay silent rather than pollute stdio
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(logging.WARNING)
    root._kimi_configured = True  # type: ignore[attr-defined]
    logging.getLogger("kimi_acp").info("%s starting (pid %d)", component, os.getpid())
    try:
        private_share_dir()  # a share dir open to other users is closed now, and that is logged
    except OSError:
        pass
    from .._compat import take_notes

    for note in take_notes():
        logging.getLogger("kimi_acp._compat").info(note)
