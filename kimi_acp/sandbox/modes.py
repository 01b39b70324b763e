"""The sandbox modes a session may choose, and what each means in words (standard library only:
a session's mode is read when it opens, long before any command needs the policy)."""

from __future__ import annotations

from typing import Literal

Mode = Literal["off", "workspace-write", "read-only"]
MODES: tuple[Mode, ...] = ("off", "workspace-write", "read-only")
MODE_TEXT = {
    "off": "commands run as before: each asks for approval",
    "workspace-write": "commands run unasked in a sandbox that may write only the workspace and its temp dir",
    "read-only": "commands run unasked in a sandbox that may write only its temp dir",
}
