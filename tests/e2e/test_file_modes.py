"""After a real `kimi --wire` session, what it wrote is its user's alone: the share dir, the
session and its files, task logs and the log are 0700/0600, and another user cannot read them
(checked as that user when the tests run as root). Issue #21, item 11."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimi_acp.sessions import work_dir_key
from tests.support.wire_client import tool_call

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}
NOBODY = 65534


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_base() -> Iterator[Path]:
    """A directory every user may enter (unlike pytest's 0700 tmp tree), so that what keeps
    another user out is the modes the agent chose, not the test's own folders."""
    base = Path(tempfile.mkdtemp(prefix="kimi-modes-"))
    base.chmod(0o755)
    (base / "home").mkdir(mode=0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run argv as user and group 65534, with no supplementary groups."""
    return subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv],
        capture_output=True, text=True, timeout=30,
    )


async def run_one_session(start_wire_process, share: Path) -> None:
    scripts = [
        tool_call("bg", "Shell", {"command": "echo task-output", "run_in_background": True, "description": "echo"}),
        tool_call("out", "TaskOutput", {"task_id": "bash-1", "block": True, "timeout": 10}),
        "text: done",
    ]
    wire = await start_wire_process(scripts, "--yolo", env={"KIMI_SHARE_DIR": str(share)})
    await wire.call("initialize", INIT)
    response, _ = await wire.call("prompt", {"user_input": "a secret conversation"})
    assert response["result"] == {"status": "finished"}
    assert await wire.close() == 0


@pytest.mark.requires_tool("setpriv")
async def test_a_sessions_files_are_private_to_their_user(start_wire_process, work_dir: Path, open_base: Path, unavailable) -> None:
    share = open_base / "home" / ".kimi"  # does not exist: the agent creates it
    await run_one_session(start_wire_process, share)
    (session_dir,) = (share / "sessions" / work_dir_key(work_dir)).iterdir()
    directories = [share, share / "sessions", session_dir.parent, session_dir, session_dir / "tasks", share / "logs"]
    files = [
        session_dir / "context.jsonl",
        session_dir / "wire.jsonl",
        session_dir / "state.json",
        session_dir / "tasks" / "bash-1.log",
        session_dir / "tasks" / "bash-1.json",
        share / "kimi.json",
        share / "logs" / "kimi.log",
    ]
    assert {str(d): oct(mode_of(d)) for d in directories} == {str(d): "0o700" for d in directories}
    assert {str(f): oct(mode_of(f)) for f in files} == {str(f): "0o600" for f in files}
    assert "a secret conversation" in (session_dir / "context.jsonl").read_text()
    if os.geteuid() != 0:
        unavailable("reading the files back as another user needs root (CI runs as root)")
    control = open_base / "home" / "readable.txt"
    control.write_text("anyone may read this\n")
    control.chmod(0o644)
    assert as_nobody("cat", str(control)).stdout == "anyone may read this\n"  # the way there is open
    for target in [share, *files]:
        done = as_nobody("cat", str(target)) if target.is_file() else as_nobody("ls", str(target))
        assert done.returncode != 0 and "Permission denied" in done.stderr, (target, done)
    # and directly, as if the share dir had let them through: the files' own modes refuse too
    share.chmod(0o755)
    session_dir.chmod(0o755)
    for parent in (share / "sessions", session_dir.parent):
        parent.chmod(0o755)
    for target in (session_dir / "context.jsonl", session_dir / "wire.jsonl", session_dir / "state.json"):
        done = as_nobody("cat", str(target))
        assert done.returncode != 0 and "Permission denied" in done.stderr, (target, done)


async def test_an_existing_share_dir_open_to_others_is_made_private_and_that_is_logged(
    start_wire_process, open_base: Path
) -> None:
    share = open_base / "home" / ".kimi"
    share.mkdir(mode=0o755)
    share.chmod(0o755)  # what older versions left
    await run_one_session(start_wire_process, share)
    assert mode_of(share) == 0o700
    log = (share / "logs" / "kimi.log").read_text()
    assert log.count(f"{share} was open to other users (mode 755); it is now private (700)") == 1
