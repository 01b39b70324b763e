"""Where a session lives, as Kimi Code CLI lays it out:
`$KIMI_SHARE_DIR/sessions/<md5 of the canonical work dir>/<session id>/`.

Standard library only: Wire's early `replay` (frontends/wire/early_replay.py) finds a session's
file on the main thread before anything else is imported, and the sessions store (sessions.py)
places and finds sessions by these same rules.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .share_dir import share_dir

SESSION_ID_MAX_CHARS = 128


def canonical_path(path: str | Path) -> Path:
    """Absolute and normalized (`.`/`..` removed) without resolving symlinks, as Kimi does."""
    return Path(os.path.normpath(os.path.abspath(os.path.expanduser(str(path)))))


def work_dir_key(work_dir: str | Path) -> str:
    """The name of a work dir's folder under `sessions/`: the md5 of its canonical path."""
    return hashlib.md5(str(canonical_path(work_dir)).encode("utf-8")).hexdigest()


def is_valid_session_id(session_id: str) -> bool:
    """Letters, digits, `-`, `_` and `.` (never `.` or `..`): a folder name, never a path."""
    return (
        bool(session_id)
        and len(session_id) <= SESSION_ID_MAX_CHARS
        and session_id not in (".", "..")
        and all(c.isalnum() or c in "-_." for c in session_id)
    )


def sessions_root() -> Path:
    return share_dir() / "sessions"


def session_dir(work_dir: str | Path, session_id: str) -> Path:
    """The folder of session `session_id` of `work_dir` (a valid id: `is_valid_session_id`)."""
    return sessions_root() / work_dir_key(work_dir) / session_id
