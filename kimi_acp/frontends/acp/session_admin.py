"""The stored sessions as an IDE's history panel manages them: `session/set_title`,
`session/status`, `session/archive` / `session/unarchive`, and `session/list`'s `archived` filter.

The SDK (0.12.1) has no routes for these methods (the request guard routes them), and drops the
list filter, so the guard reads it here before the SDK's models see the request. None of them
needs the session open: a title or the archive mark is stored on disk directly when it is not.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Literal

from ... import sessions
from ...core.session_controls import SettingError, rename_stored
from .errors import invalid_params, resource_not_found

if TYPE_CHECKING:
    from .session import AcpSession

ArchiveFilter = Literal["exclude", "include", "only"]
ARCHIVE_FILTERS: tuple[ArchiveFilter, ...] = ("exclude", "include", "only")
# The request's `archived` filter, read by the guard's check in the task that then runs the
# `session/list` handler; None (omitted or null) means "exclude", as the schema says.
_ARCHIVE_FILTER: ContextVar[ArchiveFilter] = ContextVar("acp_archive_filter", default="exclude")


def remember_archive_filter(raw: Any) -> None:
    """`session/list`'s `archived`: one of ARCHIVE_FILTERS or null; anything else is -32602
    (the schema: a value the agent does not support is refused, never taken as `exclude`)."""
    if raw is None:
        _ARCHIVE_FILTER.set("exclude")
        return
    if not isinstance(raw, str):
        raise invalid_params("archived", f"must be one of {', '.join(ARCHIVE_FILTERS)}, got {type(raw).__name__}")
    if raw not in ARCHIVE_FILTERS:
        raise invalid_params("archived", f"{raw!r} is not supported (supported: {', '.join(ARCHIVE_FILTERS)})")
    _ARCHIVE_FILTER.set(raw)


def archive_filtered(found: list[sessions.Session]) -> list[sessions.Session]:
    """The sessions the current `session/list` request asked for, by archive state (before paging)."""
    wanted = _ARCHIVE_FILTER.get()
    if wanted == "include":
        return found
    return [s for s in found if s.is_archived() == (wanted == "only")]


def stored(open_sessions: dict[str, AcpSession], session_id: str) -> sessions.Session:
    """The session as stored (the open one's, so its state stays the one in memory), or -32002."""
    acp_session = open_sessions.get(session_id)
    found = acp_session.core.session if acp_session is not None else sessions.find_by_id(session_id)
    if found is None or not found.dir.is_dir():
        raise resource_not_found(session_id)
    return found


def set_title(open_sessions: dict[str, AcpSession], session_id: str, title: str) -> dict[str, Any]:
    """Store a title the user chose: never replaced by a generated one (Kimi's `title_generated`).
    An open session announces it like `/rename` (`session_info_update`)."""
    session = stored(open_sessions, session_id)
    acp_session = open_sessions.get(session_id)
    try:
        normalized = acp_session.core.controls.rename(title) if acp_session is not None else rename_stored(session, title)
    except SettingError as exc:  # nothing left of it: the same words as every front end's
        raise invalid_params("title", str(exc)) from None
    return {"title": normalized}


def status(open_sessions: dict[str, AcpSession], session_id: str) -> dict[str, Any]:
    """`open` when this process has the session in memory, `saved` when it is only on disk.
    Nothing is opened, loaded or changed."""
    if session_id in open_sessions:
        return {"status": "open"}
    stored(open_sessions, session_id)
    return {"status": "saved"}
