"""What the agent keeps for itself is its user's alone: directories 0700, files 0600, and a share
dir an older version left open is closed once (util/fs.py; issue #21, item 11)."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from kimi_acp import sessions
from kimi_acp.config import load_config
from kimi_acp.core.context import Context
from kimi_acp.llm.types import Message
from kimi_acp.util import fs
from kimi_acp.util.fs import atomic_write_text, open_private, private_dir, private_share_dir
from kimi_acp.wire.file import WireRecorder
from kimi_acp.wire.types import TurnBegin


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def fresh_share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A share dir that does not exist yet, under a parent made with the usual 0755."""
    parent = tmp_path / "home"
    parent.mkdir(mode=0o755)
    share = parent / ".kimi"
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))
    monkeypatch.setattr(fs, "_share_dirs", {})
    return share


def test_private_dir_makes_every_missing_level_0700_and_leaves_existing_ones(tmp_path: Path) -> None:
    existing = tmp_path / "kept"
    existing.mkdir(mode=0o755)
    made = private_dir(existing / "a" / "b" / "c")
    assert made.is_dir()
    assert [mode_of(existing / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3
    assert mode_of(existing) == 0o755
    private_dir(made)  # again: nothing to do, no error
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError):
        private_dir(tmp_path / "file")


def test_open_private_creates_0600_and_keeps_an_existing_files_mode(tmp_path: Path) -> None:
    with open_private(tmp_path / "new.log", "a", encoding="utf-8") as f:
        f.write("one\n")
    assert mode_of(tmp_path / "new.log") == 0o600
    shared = tmp_path / "shared.log"
    shared.write_text("zero\n")
    shared.chmod(0o644)
    with open_private(shared, "a", encoding="utf-8") as f:
        f.write("one\n")
    assert mode_of(shared) == 0o644 and shared.read_text() == "zero\none\n"
    with open_private(shared, "wb") as f:
        f.write(b"two\n")
    assert shared.read_text() == "two\n"
    with pytest.raises(FileExistsError):
        open_private(shared, "x")


def test_atomic_write_text_is_0600_in_0700_folders_unless_told(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "new" / "state.json", "{}")
    assert mode_of(tmp_path / "new") == 0o700 and mode_of(tmp_path / "new" / "state.json") == 0o600
    atomic_write_text(tmp_path / "new" / "public.json", "{}", mode=0o644)
    assert mode_of(tmp_path / "new" / "public.json") == 0o644


def test_a_new_share_dir_and_a_session_in_it_are_private(fresh_share: Path, work_dir: Path) -> None:
    session = sessions.create(work_dir)
    assert mode_of(fresh_share.parent) == 0o755  # not ours: left alone
    for directory in (fresh_share, fresh_share / "sessions", session.dir.parent, session.dir):
        assert mode_of(directory) == 0o700, directory
    ctx = Context(session.context_file)
    ctx.start("prompt")
    ctx.append([Message(role="user", content="hello")])
    ctx.close()
    recorder = WireRecorder(session.dir / "wire.jsonl")
    recorder.record(TurnBegin(user_input="hello"))
    recorder.close()
    child = sessions.child_session(session, "agent-1")
    for name in ("context.jsonl", "wire.jsonl", "state.json"):
        assert mode_of(session.dir / name) == 0o600, name
    assert mode_of(fresh_share / "kimi.json") == 0o600
    assert mode_of(child.dir.parent) == 0o700 and mode_of(child.dir) == 0o700


def test_the_default_config_is_created_0600(fresh_share: Path) -> None:
    loaded = load_config()
    assert loaded.path == fresh_share / "config.toml" and loaded.path.exists()
    assert mode_of(fresh_share) == 0o700 and mode_of(loaded.path) == 0o600


def test_a_share_dir_open_to_others_is_closed_once_with_one_log_line(
    fresh_share: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fresh_share.mkdir(mode=0o755)
    fresh_share.chmod(0o755)
    with caplog.at_level(logging.INFO, logger="kimi_acp.util.fs"):
        private_share_dir()
        private_share_dir()
    assert mode_of(fresh_share) == 0o700
    notes = [r.getMessage() for r in caplog.records if r.name == "kimi_acp.util.fs"]
    assert notes == [f"{fresh_share} was open to other users (mode 755); it is now private (700)"]


def test_the_note_waits_for_a_log_handler(fresh_share: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh_share.mkdir()
    fresh_share.chmod(0o750)
    with monkeypatch.context() as patched:
        patched.setattr(logging.Logger, "hasHandlers", lambda self: False)
        private_share_dir()  # before the servers set up their log: the note is kept
    assert mode_of(fresh_share) == 0o700
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logging.getLogger("kimi_acp.util.fs").addHandler(handler)
    try:
        private_share_dir()
        private_share_dir()
    finally:
        logging.getLogger("kimi_acp.util.fs").removeHandler(handler)
    assert [r.getMessage() for r in records] == [f"{fresh_share} was open to other users (mode 750); it is now private (700)"]
