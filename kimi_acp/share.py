"""Where Kimi keeps its files (`$KIMI_SHARE_DIR`, default `~/.kimi`). Standard library only: the
log setup of both servers needs it before anything heavy is imported."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_SHARE_DIR = "~/.kimi"


def share_dir() -> Path:
    """`$KIMI_SHARE_DIR`, else `~/.kimi` (not created here)."""
    return Path(os.environ.get("KIMI_SHARE_DIR") or DEFAULT_SHARE_DIR).expanduser()
