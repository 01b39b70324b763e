"""The on-disk session store, in Kimi Code CLI's layout so sessions move freely between the two.

    $KIMI_SHARE_DIR/sessions/<md5 of canonical work dir>/<session id>/
        context.jsonl   model history (core/context.py)
        wire.jsonl      every message of every turn (wire/file.py)
        state.json      approvals, title, plan mode, todos (written atomically)
        turn.lock       held by the process running a turn of the session (core/session_lock.py)
        archived        present while the session is archived (hidden from default listings);
                        a file of its own, so no process's rewrite of state.json can drop it
    $KIMI_SHARE_DIR/kimi.json   work dirs and their last session (for --continue)
    $KIMI_SHARE_DIR/kimi.json.lock   held while a process updates kimi.json
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import SessionError
from .util.file_lock import release, wait_lock
from .util.fs import atomic_write_text, make_dirs_below, open_private, private_dir, private_share_dir

# the layout, shared with Wire's early replay (re-exported: this module's API too)
from .util.session_paths import canonical_path as canonical_path
from .util.session_paths import is_valid_session_id as is_valid_session_id
from .util.session_paths import session_dir
from .util.session_paths import sessions_root as sessions_root
from .util.session_paths import work_dir_key as work_dir_key
from .util.share_dir import share_dir
from .wire.types import TodoDisplayItem

log = logging.getLogger(__name__)

TITLE_MAX_CHARS = 50


class _State(BaseModel):
    # Keys written by other versions (or Kimi Code CLI) are kept on rewrite.
    model_config = ConfigDict(extra="allow", defer_build=True)


class ApprovalState(_State):
    yolo: bool = False
    afk: bool = False
    auto_approve_actions: list[str] = []


class ClientSystemPrompt(_State):
    """The IDE's own instructions for a session (ACP `systemPrompt`): `append`ed to ours, or `override`."""

    mode: str
    text: str


class SessionState(_State):
    version: int = 1
    approval: ApprovalState = Field(default_factory=ApprovalState)
    additional_dirs: list[str] = []
    custom_title: str | None = None
    title_generated: bool = False  # Kimi's key: the title came from the model or the user (/rename): keep it
    title_generate_attempts: int = 0  # Kimi's key: model requests made for a title so far
    plan_mode: bool = False
    plan_session_id: str | None = None  # set while plan mode is on; names the plan file (core/plan_file.py)
    plan_slug: str | None = None  # the plan file is $KIMI_SHARE_DIR/plans/<plan_slug>.md
    todos: list[TodoDisplayItem] = []
    model: str | None = None  # this session's model choice (ACP picker), when it differs from the default
    thinking: bool | None = None
    sandbox: str | None = None  # this session's sandbox mode (IDE picker, /sandbox); None: --sandbox, else the config's
    # Every command asks, read-only ones too (the IDE's "Always ask" mode); None: --always-ask, else the config's
    always_ask: bool | None = None
    system_prompt: ClientSystemPrompt | None = None  # kept, so it applies after a reload and in other processes
    work_dir: str | None = None  # lets a session be found by id alone (ACP prompt to a closed session)
    cost: dict[str, float] | None = None  # what its model requests cost so far, per currency (core/usage.py)


def new_session_id() -> str:
    return str(uuid.uuid4())


def shorten_title(text: str, limit: int = TITLE_MAX_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass
class Session:
    """One session directory and its state. Cheap to construct; nothing is read until asked."""

    id: str
    work_dir: Path
    dir: Path
    state: SessionState

    @property
    def context_file(self) -> Path:
        return self.dir / "context.jsonl"

    @property
    def wire_file(self) -> Path:
        return self.dir / "wire.jsonl"

    @property
    def state_file(self) -> Path:
        return self.dir / "state.json"

    def save_state(self) -> None:
        self.state.work_dir = str(self.work_dir)
        try:  # never re-creates the folder: only `create` makes it, so a deleted session stays deleted
            atomic_write_text(self.state_file, self.state.model_dump_json(indent=2, exclude_none=True), make_parents=False)
        except FileNotFoundError:
            if self.dir.is_dir():
                raise
            log.warning("session %s was deleted; its state is not saved", self.id)

    def title(self) -> str:
        if self.state.custom_title:
            return self.state.custom_title
        first = first_turn_text(self.wire_file)
        return shorten_title(first) if first else "Untitled"

    def updated_at(self) -> float:
        times = []
        for f in (self.context_file, self.wire_file):
            try:
                times.append(f.stat().st_mtime)
            except OSError:
                pass
        if not times:
            try:
                times.append(self.dir.stat().st_mtime)
            except OSError:
                times.append(0.0)
        return max(times)

    @property
    def archive_marker(self) -> Path:
        return self.dir / "archived"

    def is_archived(self) -> bool:
        return self.archive_marker.exists()

    def set_archived(self, archived: bool) -> None:
        """Archive (hide from default listings) or unarchive; either twice is no error."""
        if archived:
            open_private(self.archive_marker, "w").close()
        else:
            self.archive_marker.unlink(missing_ok=True)

    def is_empty(self) -> bool:
        """No turn ever ran: nothing worth listing."""
        if self.state.custom_title:
            return False
        try:
            with open(self.wire_file, "rb") as f:
                for line in f:
                    if b'"message"' in line:
                        return False
        except OSError:
            pass
        return True


def first_turn_text(wire_file: Path) -> str:
    """The text of the first TurnBegin in a wire.jsonl, without loading the whole file."""
    try:
        with open(wire_file, encoding="utf-8") as f:
            for line in f:
                if '"TurnBegin"' not in line:
                    continue
                try:
                    record = json.loads(line)
                    user_input = record["message"]["payload"]["user_input"]
                except (ValueError, KeyError, TypeError):
                    continue
                if isinstance(user_input, str):
                    return user_input
                if isinstance(user_input, list):
                    return "".join(p.get("text", "") for p in user_input if isinstance(p, dict))
    except OSError:
        pass
    return ""


def _load_state(state_file: Path) -> SessionState:
    try:
        raw = state_file.read_text(encoding="utf-8")
    except OSError:
        return SessionState()
    except UnicodeDecodeError:
        log.warning("ignoring unreadable %s: not UTF-8", state_file)
        return SessionState()
    try:
        return SessionState.model_validate_json(raw)
    except ValidationError as exc:
        # A damaged state file must not lose the session: keep going with defaults, but do not
        # overwrite it until something actually changes.
        log.warning("ignoring unreadable %s: %s", state_file, exc.errors()[0].get("msg"))
        return SessionState()


def create(work_dir: str | Path, session_id: str | None = None) -> Session:
    work_dir = canonical_path(work_dir)
    session_id = session_id or new_session_id()
    validate_session_id(session_id)
    directory = session_dir(work_dir, session_id)
    private_share_dir()  # made 0700, or closed to other users once
    private_dir(directory)  # sessions/, the work dir's folder and the session's: 0700
    session = Session(session_id, work_dir, directory, SessionState(work_dir=str(work_dir)))
    session.save_state()
    _remember_work_dir(work_dir)
    return session


def find(work_dir: str | Path, session_id: str) -> Session | None:
    work_dir = canonical_path(work_dir)
    if not is_valid_session_id(session_id):
        return None
    directory = session_dir(work_dir, session_id)
    if not directory.is_dir():
        return None
    return Session(session_id, work_dir, directory, _load_state(directory / "state.json"))


def find_by_id(session_id: str) -> Session | None:
    """Find a session when only its id is known (its work dir comes from state.json or kimi.json)."""
    if not is_valid_session_id(session_id):
        return None
    root = sessions_root()
    try:
        candidates = [d / session_id for d in root.iterdir() if (d / session_id).is_dir()]
    except OSError:
        return None
    for directory in candidates:
        state = _load_state(directory / "state.json")
        work_dir = state.work_dir or _work_dir_for_key(directory.parent.name)
        if work_dir:
            return Session(session_id, canonical_path(work_dir), directory, state)
    return None


def delete(session: Session) -> None:
    """Remove a session from disk. The folder is first renamed to a name no listing accepts, so a
    crash half-way through never leaves a half-deleted session that still shows up."""
    trash = session.dir.with_name(f"~deleted~{session.id}~{uuid.uuid4().hex[:8]}")
    session.dir.rename(trash)
    shutil.rmtree(trash, ignore_errors=True)
    with _metadata_lock():
        data = _load_metadata()
        entry = _entry_for(data, session.work_dir, create=False)
        if entry is not None and entry.get("last_session_id") == session.id:
            entry["last_session_id"] = None
            _save_metadata(data)


def list_sessions(work_dir: str | Path) -> list[Session]:
    """Non-empty sessions of a work dir, most recently updated first."""
    work_dir = canonical_path(work_dir)
    base = sessions_root() / work_dir_key(work_dir)
    try:
        entries = [d for d in base.iterdir() if d.is_dir() and is_valid_session_id(d.name)]
    except OSError:
        return []
    sessions = [Session(d.name, work_dir, d, _load_state(d / "state.json")) for d in entries]
    return _listed(sessions)


def list_all_sessions() -> list[Session]:
    """Non-empty sessions of every work dir, most recently updated first."""
    root = sessions_root()
    try:
        buckets = [d for d in root.iterdir() if d.is_dir()]
    except OSError:
        return []
    found: list[Session] = []
    for bucket in buckets:
        fallback_work_dir: str | None = None
        for directory in bucket.iterdir():
            if not (directory.is_dir() and is_valid_session_id(directory.name)):
                continue
            state = _load_state(directory / "state.json")
            work_dir = state.work_dir
            if not work_dir:
                fallback_work_dir = fallback_work_dir or _work_dir_for_key(bucket.name)
                work_dir = fallback_work_dir
            if work_dir:
                found.append(Session(directory.name, canonical_path(work_dir), directory, state))
    return _listed(found)


def _listed(found: list[Session]) -> list[Session]:
    """What a session list shows: sessions where a turn ran, most recently updated first."""
    shown = [s for s in found if not s.is_empty()]
    shown.sort(key=lambda s: s.updated_at(), reverse=True)
    return shown


def validate_session_id(session_id: str) -> None:
    if not is_valid_session_id(session_id):
        raise ValueError(f"invalid session id {session_id!r} (letters, digits, '-', '_' and '.' only)")


# --------------------------------------------------------------------------- kimi.json


def metadata_file() -> Path:
    return share_dir() / "kimi.json"


def _load_metadata() -> dict[str, Any]:
    try:
        data = json.loads(metadata_file().read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _work_dirs(data: dict[str, Any]) -> list[dict[str, Any]]:
    entries = data.get("work_dirs")
    if not isinstance(entries, list):
        entries = []
        data["work_dirs"] = entries
    return [e for e in entries if isinstance(e, dict)]


def _entry_for(data: dict[str, Any], work_dir: Path, create: bool) -> dict[str, Any] | None:
    for entry in _work_dirs(data):
        if entry.get("path") == str(work_dir) and entry.get("kaos", "local") == "local":
            return entry
    if not create:
        return None
    entry = {"path": str(work_dir), "kaos": "local", "last_session_id": None}
    data["work_dirs"].append(entry)
    return entry


def _remember_work_dir(work_dir: Path) -> None:
    with _metadata_lock():
        data = _load_metadata()
        if _entry_for(data, work_dir, create=False) is None:
            _entry_for(data, work_dir, create=True)
            _save_metadata(data)


@contextlib.contextmanager
def _metadata_lock() -> Iterator[None]:
    """Every kimi process reads, changes and writes back kimi.json (IDE windows opening sessions at
    once): one at a time, or one's work dir is lost. A holder stuck past the wait (a stopped
    process) is not worth failing a session for: the update then goes ahead without the lock."""
    path = metadata_file().with_name("kimi.json.lock")
    fd: int | None
    try:
        fd = wait_lock(path)
    except OSError as exc:
        log.warning("updating kimi.json without its lock: %s", exc)
        fd = None
    try:
        yield
    finally:
        release(fd)


def _save_metadata(data: dict[str, Any]) -> None:
    try:
        atomic_write_text(metadata_file(), json.dumps(data, indent=2, ensure_ascii=False))
    except OSError as exc:
        log.warning("cannot write %s: %s", metadata_file(), exc)


def last_session_id(work_dir: str | Path) -> str | None:
    entry = _entry_for(_load_metadata(), canonical_path(work_dir), create=False)
    value = entry.get("last_session_id") if entry else None
    return value if isinstance(value, str) and value else None


def set_last_session_id(work_dir: str | Path, session_id: str) -> None:
    with _metadata_lock():
        data = _load_metadata()
        entry = _entry_for(data, canonical_path(work_dir), create=True)
        assert entry is not None
        if entry.get("last_session_id") != session_id:
            entry["last_session_id"] = session_id
            _save_metadata(data)


def _work_dir_for_key(key: str) -> str | None:
    for entry in _work_dirs(_load_metadata()):
        path = entry.get("path")
        if isinstance(path, str) and work_dir_key(path) == key:
            return path
    return None


def iso_time(ts: float) -> str:
    """ISO-8601 with the local UTC offset (what ACP `updatedAt` carries)."""
    from datetime import datetime

    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")



class SessionSelectionError(SessionError):
    """`--session` / `--continue` cannot be honoured; the message is one line for the user."""


def select(work_dir: str | Path, session_id: str | None = None, continue_last: bool = False) -> Session:
    """The session a CLI run uses: `--session ID` (created if new), `--continue`, or a new one."""
    if session_id and continue_last:
        raise SessionSelectionError("--session and --continue cannot be used together")
    if continue_last:
        last = last_session_id(work_dir)
        session = find(work_dir, last) if last else None
        if session is None:
            raise SessionSelectionError("No previous session found for the working directory")
        return session
    if session_id:
        if not is_valid_session_id(session_id):
            raise SessionSelectionError(f"invalid session id {session_id!r}")
        return find(work_dir, session_id) or create(work_dir, session_id)
    return create(work_dir)


def child_session(parent: Session, child_id: str) -> Session:
    """A subagent's session inside its parent's: `<session dir>/subagents/<id>/` (Kimi's layout),
    with context.jsonl and wire.jsonl of its own. Never listed as a session of the work dir."""
    validate_session_id(child_id)
    directory = parent.dir / "subagents" / child_id
    make_dirs_below(parent.dir, directory)  # FileNotFoundError when the parent session was deleted
    return Session(child_id, parent.work_dir, directory, _load_state(directory / "state.json"))
