"""Where Kimi keeps its files (`$KIMI_SHARE_DIR`, default `~/.kimi`). Standard library only: the
log setup of both servers needs it before anything heavy is imported."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_SHARE_DIR = "~/.kimi"


def share_dir() -> Path:
    """`$KIMI_SHARE_DIR`, else `~/.kimi` (not created here)."""
    return Path(os.environ.get("KIMI_SHARE_DIR") or DEFAULT_SHARE_DIR).expanduser()


def mcp_file() -> Path:
    """Kimi's global MCP server list, `$KIMI_SHARE_DIR/mcp.json` (the file `kimi mcp` edits).

    Here rather than in `mcp/`: every session start asks whether it exists, and the answer must
    not cost the import of the MCP layer."""
    return share_dir() / "mcp.json"
