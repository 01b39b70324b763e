"""A session folder deleted by another process stays deleted: no writer of the session re-creates
it (only `sessions.create` makes it). Each writer fails (or, for state.json, skips) instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_acp import sessions
from kimi_acp.core.context import Context
from kimi_acp.core.errors import SessionDeleted
from kimi_acp.core.session_lock import TurnLock
from kimi_acp.kaos.tasks import TaskTable
from kimi_acp.subagents.store import SubagentStore
from kimi_acp.wire.file import WireRecorder
from kimi_acp.wire.types import TurnBegin


@pytest.fixture
def deleted(tmp_path: Path) -> sessions.Session:
    work_dir = tmp_path / "project"
    work_dir.mkdir()
    session = sessions.create(work_dir)
    assert session.dir.is_dir()
    sessions.delete(session)
    assert not session.dir.exists()
    return session


def test_state_wire_and_context_writes_do_not_bring_the_folder_back(deleted: sessions.Session) -> None:
    deleted.state.plan_mode = True
    deleted.save_state()  # skipped with a warning: the session is gone
    with pytest.raises(FileNotFoundError):
        WireRecorder(deleted.wire_file).record(TurnBegin(user_input="late"))
    with pytest.raises(FileNotFoundError):
        Context(deleted.context_file).start("late system prompt")
    assert not deleted.dir.exists()


def test_the_next_turn_is_refused_as_deleted(deleted: sessions.Session) -> None:
    with pytest.raises(SessionDeleted, match="This session was deleted"):
        TurnLock(deleted.dir).acquire()
    assert not deleted.dir.exists()


async def test_tasks_and_subagents_do_not_bring_the_folder_back(deleted: sessions.Session, tmp_path: Path) -> None:
    table = TaskTable(deleted.dir / "tasks")
    with pytest.raises(FileNotFoundError):
        await table.launch("echo late", cwd=tmp_path, description="late", timeout_s=5)
    await table.aclose()
    with pytest.raises(FileNotFoundError):
        SubagentStore(deleted.dir).create("a1", subagent_type="coder", description="late", model=None, work_dir=str(tmp_path))
    with pytest.raises(FileNotFoundError):
        sessions.child_session(deleted, "child-1")
    assert not deleted.dir.exists()


def test_a_live_session_still_gets_its_subfolders(tmp_path: Path) -> None:
    work_dir = tmp_path / "project"
    work_dir.mkdir()
    session = sessions.create(work_dir)
    child = sessions.child_session(session, "child-1")
    assert child.dir == session.dir / "subagents" / "child-1" and child.dir.is_dir()
    SubagentStore(session.dir).create("a1", subagent_type="coder", description="d", model=None, work_dir=str(work_dir))
    assert (session.dir / "subagents" / "a1" / "meta.json").is_file()
