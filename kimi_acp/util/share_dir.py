"""Where Kimi keeps its files (`$KIMI_SHARE_DIR`, default `~/.kimi`). Standard library only: the
log setup of both servers needs it before anything heavy is imported."""

from __future__ import annotations

import json
import os
from pathlib import Path

DEFAULT_SHARE_DIR = "~/.kimi"


def share_dir() -> Path:
    """`$KIMI_SHARE_DIR`, else `~/.kimi` (not created here)."""
    return Path(os.environ.get("KIMI_SHARE_DIR") or DEFAULT_SHARE_DIR).expanduser()


def cache_dir() -> Path:
    """`$KIMI_CACHE_DIR`, else `$KIMI_SHARE_DIR/cache`: what the servers build once and reuse (the
    ACP schema index, the generated-code cache; kimi_acp/_compat/)."""
    configured = os.environ.get("KIMI_CACHE_DIR")
    return Path(configured).expanduser() if configured else share_dir() / "cache"


def in_share_dir(path: Path) -> bool:
    """Whether `path` (as typed, or where it really leads) lies in the share dir: the agent's own
    files (plans, sessions, config), which it keeps on its own disk whoever else may show them."""
    root = share_dir()
    roots = {Path(os.path.abspath(root)), Path(os.path.realpath(root))}
    typed = Path(os.path.abspath(path))
    for candidate in {typed, Path(os.path.realpath(typed))}:
        if any(candidate == r or r in candidate.parents for r in roots):
            return True
    return False


def mcp_file() -> Path:
    """Kimi's global MCP server list, `$KIMI_SHARE_DIR/mcp.json` (the file `kimi mcp` edits).

    Here rather than in `mcp/`: every session start asks whether it exists, and the answer must
    not cost the import of the MCP layer."""
    return share_dir() / "mcp.json"


def mcp_file_may_list_servers() -> bool:
    """Whether mcp.json may name a server, or hold a mistake worth reporting. False when it is
    missing or is an object without servers (`{"mcpServers": {}}`, what removing the last server
    with `kimi mcp` leaves): such a session loads nothing of the MCP layer either."""
    try:
        text = mcp_file().read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return True  # unreadable: the MCP layer says why
    try:
        data = json.loads(text)
    except ValueError:
        return True
    if not isinstance(data, dict):
        return True
    servers = data.get("mcpServers")
    return not (servers is None or (isinstance(servers, dict) and not servers))
