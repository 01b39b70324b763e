"""Small file helpers shared by the session store and config writing: atomic replace, path canon."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def canonical_path(path: str | Path) -> Path:
    """Absolute and normalized (`.`/`..` removed) without resolving symlinks, as Kimi does."""
    return Path(os.path.normpath(os.path.abspath(os.path.expanduser(str(path)))))


def atomic_write_text(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write via a temp file in the same directory, fsync, then rename over `path`.

    A crash at any point leaves either the old file or the new one, never a torn mix.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def ends_with_newline(path: Path) -> bool:
    """True for an empty or missing file, or one whose last byte is a newline.

    Appenders check it before their first write: after a crash mid-write the last line is torn,
    and the next record must start on a line of its own rather than be glued to the fragment.
    """
    try:
        with open(path, "rb") as f:
            f.seek(-1, 2)
            return f.read(1) == b"\n"
    except OSError:
        return True


def iter_json_objects(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every JSON object line of a JSONL file; a missing file is empty.

    Torn lines (a crash mid-write) and lines that are not objects are logged and skipped, never
    fatal: a session file must always load.
    """
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError:
        return
    with f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError:
                log.warning("%s:%d: skipping unreadable line (torn write?)", path, lineno)
                continue
            if isinstance(data, dict):
                yield lineno, data
