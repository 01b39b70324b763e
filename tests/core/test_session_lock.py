"""A session's turn lock (core/session_lock.py) and the context catching up with other processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kimi_acp import sessions
from kimi_acp.config import load_config
from kimi_acp.core.agent_core import AgentCore
from kimi_acp.core.context import Context
from kimi_acp.core.errors import LLMNotSet, SessionBusy
from kimi_acp.core.session_lock import LOCK_FILE, TurnLock
from kimi_acp.kaos.local import LocalKaos
from kimi_acp.llm.types import Message
from kimi_acp.wire.types import TextPart

ECHO_CONFIG = (
    '{"default_model": "a", "models": {"a": {"provider": "p", "model": "echo", "max_context_size": 1000}}, '
    '"providers": {"p": {"type": "_echo"}}}'
)


def core_for(session: sessions.Session, config_text: str = ECHO_CONFIG) -> AgentCore:
    return AgentCore.open(session=session, loaded_config=load_config(config_text=config_text), kaos=LocalKaos())


def user_words(core: AgentCore) -> list[str]:
    return [m.text() for m in core.context.history if m.role == "user"]


@pytest.fixture
def session(tmp_path: Path) -> sessions.Session:
    work_dir = tmp_path / "project"
    work_dir.mkdir()
    return sessions.create(work_dir)


def test_a_second_holder_in_this_process_is_refused_until_the_first_lets_go(tmp_path: Path) -> None:
    first, second = TurnLock(tmp_path), TurnLock(tmp_path)
    first.acquire()
    with pytest.raises(SessionBusy) as busy:
        second.acquire()
    assert busy.value.holder == os.getpid()
    assert "running a turn elsewhere in this process" in str(busy.value)
    first.release()
    second.acquire()
    with pytest.raises(SessionBusy):  # the second holds it now
        TurnLock(tmp_path).acquire()
    second.release()
    assert (tmp_path / LOCK_FILE).stat().st_mode & 0o777 == 0o600


def test_a_holder_process_is_named_and_its_death_frees_the_session(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from kimi_acp.core.session_lock import TurnLock
        TurnLock(Path({str(tmp_path)!r})).acquire()
        print("held", flush=True)
        time.sleep(60)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        with pytest.raises(SessionBusy) as busy:
            TurnLock(tmp_path).acquire()
        assert busy.value.holder == child.pid
        assert f"another kimi process (pid {child.pid})" in str(busy.value)
        child.send_signal(signal.SIGKILL)  # a crash: the kernel drops the lock
        child.wait(5)
        lock = TurnLock(tmp_path)
        lock.acquire()
        assert (tmp_path / LOCK_FILE).read_text().strip() == str(os.getpid())
        lock.release()
    finally:
        child.kill()
        child.wait(5)


def test_a_busy_session_refuses_the_turn_before_anything_is_written(session: sessions.Session) -> None:
    import asyncio

    core = core_for(session)
    before = session.context_file.read_text()
    holder = TurnLock(session.dir)
    holder.acquire()
    try:
        with pytest.raises(SessionBusy):
            asyncio.run(core.run_turn("text: never"))
        assert session.context_file.read_text() == before
        assert not core.busy
    finally:
        holder.release()
    assert asyncio.run(core.run_turn("text: now")).status == "finished"
    assert user_words(core) == ["text: now"]


def test_a_failed_turn_lets_go_of_the_session(session: sessions.Session) -> None:
    import asyncio

    core = core_for(session, "{}")  # no model configured
    with pytest.raises(LLMNotSet):
        asyncio.run(core.run_turn("hello"))
    lock = TurnLock(session.dir)
    lock.acquire()  # not left held
    lock.release()


def test_the_next_turn_sees_what_another_core_of_the_session_added(session: sessions.Session) -> None:
    import asyncio

    here = core_for(session)
    assert asyncio.run(here.run_turn("text: one")).status == "finished"
    elsewhere = core_for(sessions.find(session.work_dir, session.id))  # as a second process opens it
    assert asyncio.run(elsewhere.run_turn("text: two")).status == "finished"
    assert asyncio.run(here.run_turn("text: three")).status == "finished"
    assert user_words(here) == ["text: one", "text: two", "text: three"]
    assert user_words(core_for(session)) == ["text: one", "text: two", "text: three"]  # and on disk


def test_the_context_knows_its_own_writes_from_other_writers(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    mine = Context.load(path)
    assert not mine.changed_elsewhere()  # no file yet, none expected
    mine.start("prompt")
    mine.append([Message(role="user", content=[TextPart(text="hi")])])
    mine.close()
    assert not mine.changed_elsewhere()
    theirs = Context.load(path)
    assert not mine.changed_elsewhere()  # reading is not writing
    theirs.append([Message(role="user", content=[TextPart(text="from elsewhere")])])
    theirs.close()
    assert mine.changed_elsewhere()
    again = Context.load(path)
    theirs.rotate("prompt")  # /clear or compaction elsewhere: a new file in its place
    theirs.close()
    assert again.changed_elsewhere()
