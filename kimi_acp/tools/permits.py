"""How the built-in tools ask before they read, write or reach the network (kimi_acp/permissions).

- A read of a file holding credentials asks for that one file, with a warning; a read outside
  the workspace (work dir, additional dirs, skill dirs, the plan file, the temp dir) asks, and
  "approve for this session" covers that directory; any other read runs unless a rule says
  otherwise.
- An edit inside the workspace asks ("approve for this session": every in-workspace edit); one
  outside asks per directory; a protected path always asks, with a warning. In a session whose
  commands run in the `workspace-write` sandbox (kimi_acp/sandbox), an edit the sandbox would let a
  command make (inside the workspace, not protected) runs unasked, as the command would.
- A fetch or web search asks per host.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from ..permissions.protected import protected_reason
from ..permissions.scope import action_scope, host_scope, path_scope
from ..permissions.sensitive import sensitive_reason
from ..util.visible_text import code_span
from ..wire.actions import (
    EDIT_ACTION,
    EDIT_OUTSIDE_ACTION,
    FETCH_ACTION,
    READ_OUTSIDE_ACTION,
    READ_SENSITIVE_ACTION,
)
from ..wire.types import DisplayBlock
from .base import ToolContext, is_within, real_path


def read_warning(path: Path) -> str | None:
    """The warning a read of `path` always asks with, or None."""
    reason = sensitive_reason(path)
    if reason is None:
        return None
    return f"{code_span(str(path))} holds credentials ({reason}). Approving sends its content to the model."


async def permit_read(ctx: ToolContext, path: Path, *, what: str = "Read") -> None:
    """Before a tool returns the content of `path` (a file or a directory searched): ask when it
    holds credentials or lies outside where the agent reads freely. Raises as `ctx.approve` does."""
    warning = read_warning(path)
    if warning is not None:
        await ctx.approve(action=READ_SENSITIVE_ACTION, description=f"{what} {code_span(str(path))}", warning=warning)
        return
    inside = ctx.may_read(path)
    scope = path_scope(READ_OUTSIDE_ACTION, path, "reads", directory=_is_dir(path))
    await ctx.approve(
        action=READ_OUTSIDE_ACTION, description=f"{what} {code_span(str(path))} (outside the workspace)", scope=scope, needed=not inside
    )


def holds_credentials(path: Path, approved: Path) -> bool:
    """A path a search found that holds credentials (permissions/sensitive.py), unless it is the
    one the user approved: Grep and Glob leave it out (a match, or a name in the agent's share
    dir, already tells too much) and say so."""
    return path != approved and sensitive_reason(path) is not None


def leads_outside(ctx: ToolContext, path: Path, searched: Path) -> bool:
    """A path a search found that really lies (through a symbolic link) outside where reads are
    free and outside the directory the user let it search: listed, it would be a read unasked."""
    return not ctx.may_read(path) and not is_within(real_path(path), real_path(searched))


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


async def permit_edit(ctx: ToolContext, path: Path, description: str, display: Sequence[DisplayBlock]) -> None:
    """Before a file changes: in the workspace, outside it (per directory), or protected (always)."""
    reason = protected_reason(path)
    warning = f"{code_span(str(path))} is {reason}." if reason is not None else None
    needed = True
    if ctx.in_workspace(path):
        scope = action_scope(EDIT_ACTION, "edits of files in the workspace", path=path)
        action = EDIT_ACTION
        sandbox = ctx.sandbox
        needed = sandbox is None or not sandbox.edits_unasked(path, ctx.work_dir, ctx.additional_dirs)
    else:
        action = EDIT_OUTSIDE_ACTION
        scope = path_scope(EDIT_OUTSIDE_ACTION, real_path(path), "edits of files")
    await ctx.approve(action=action, description=description, display=display, scope=scope, warning=warning, needed=needed)


def url_host(url: str) -> str:
    """`host[:port]` of a URL, as a fetch card names it."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    return f"{host}:{parts.port}" if parts.port else host


async def permit_fetch(ctx: ToolContext, url: str, description: str) -> None:
    """Before the agent's own tools send anything to `url`'s host."""
    host = url_host(url)
    await ctx.approve(action=FETCH_ACTION, description=description, scope=host_scope(FETCH_ACTION, host))
