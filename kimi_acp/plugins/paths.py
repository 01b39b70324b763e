"""Where plugins are installed: `$KIMI_SHARE_DIR/plugins/` (Kimi Code CLI's directory)."""

from __future__ import annotations

from pathlib import Path

from ..util.share_dir import share_dir


def plugins_dir() -> Path:
    return share_dir() / "plugins"
