from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kimi_acp.kaos.base import BinaryFileError
from kimi_acp.kaos.local import LocalKaos, runs_bash, user_shell


@pytest.fixture
def kaos() -> LocalKaos:
    return LocalKaos()


async def test_read_write_append_and_size(kaos: LocalKaos, tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    assert await kaos.write_text(path, "héllo\n") == len("héllo\n".encode())
    assert await kaos.write_text(path, "more\n", append=True) == len("héllo\nmore\n".encode())
    assert await kaos.read_text(path) == "héllo\nmore\n"
    assert await kaos.read_bytes(path, limit=3) == "hé".encode()


async def test_crlf_is_preserved(kaos: LocalKaos, tmp_path: Path) -> None:
    path = tmp_path / "crlf.txt"
    await kaos.write_text(path, "a\r\nb\r\n")
    assert path.read_bytes() == b"a\r\nb\r\n"
    assert await kaos.read_text(path) == "a\r\nb\r\n"


async def test_large_file_round_trip(kaos: LocalKaos, tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    text = "line of text\n" * 100_000
    assert await kaos.write_text(path, text) == len(text)
    assert await kaos.read_text(path) == text


async def test_read_errors(kaos: LocalKaos, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await kaos.read_text(tmp_path / "missing")
    with pytest.raises(IsADirectoryError):
        await kaos.read_text(tmp_path)
    (tmp_path / "nul.bin").write_bytes(b"abc\x00def")
    with pytest.raises(BinaryFileError):
        await kaos.read_text(tmp_path / "nul.bin")
    (tmp_path / "latin1.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(BinaryFileError):
        await kaos.read_text(tmp_path / "latin1.txt")


async def test_stat(kaos: LocalKaos, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("12345")
    st = await kaos.stat(tmp_path / "f")
    assert st is not None and st.is_file and not st.is_dir and st.size == 5
    st = await kaos.stat(tmp_path)
    assert st is not None and st.is_dir and not st.is_file
    assert await kaos.stat(tmp_path / "missing") is None
    assert await kaos.stat(tmp_path / "f" / "below") is None


def test_commands_run_with_bash_whatever_the_users_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent reads every command as bash parses it (permissions/shell_parse.py): bash runs it."""
    for shell in ("/usr/bin/fish", "/bin/sh", "/usr/bin/zsh", None):
        if shell is None:
            monkeypatch.delenv("SHELL")
        else:
            monkeypatch.setenv("SHELL", shell)
        assert user_shell() == "/bin/bash" and runs_bash()


async def test_run_merges_output_and_exit_code(kaos: LocalKaos, tmp_path: Path) -> None:
    result = await kaos.run_command(
        "echo out; echo err >&2; pwd; exit 3", cwd=tmp_path, timeout=10, output_limit=1000
    )
    assert result.output == f"out\nerr\n{tmp_path}\n"
    assert result.exit_code == 3
    assert not result.timed_out and not result.truncated and result.signal is None


async def test_run_env_and_closed_stdin(kaos: LocalKaos, tmp_path: Path) -> None:
    result = await kaos.run_command(
        'cat; echo "$PAGER $GIT_PAGER $TERM $NO_COLOR"', cwd=tmp_path, timeout=10, output_limit=1000
    )
    assert result.output == "cat cat dumb 1\n"


async def test_run_truncates_but_drains(kaos: LocalKaos, tmp_path: Path) -> None:
    result = await kaos.run_command(
        "head -c 300000 /dev/zero | tr '\\0' x; echo; echo tail", cwd=tmp_path, timeout=10, output_limit=1000
    )
    assert result.exit_code == 0
    assert result.truncated
    assert result.output == "x" * 1000


async def test_run_invalid_utf8_is_replaced(kaos: LocalKaos, tmp_path: Path) -> None:
    result = await kaos.run_command("printf 'a\\377b'", cwd=tmp_path, timeout=10, output_limit=100)
    assert result.output == "a\ufffdb"


async def test_run_signal(kaos: LocalKaos, tmp_path: Path) -> None:
    result = await kaos.run_command("kill -9 $$", cwd=tmp_path, timeout=10, output_limit=100)
    assert result.signal == "SIGKILL"
    assert result.exit_code is None


async def test_run_timeout_kills_group(kaos: LocalKaos, tmp_path: Path, alive: Callable[[int], bool]) -> None:
    start = time.monotonic()
    result = await kaos.run_command(
        "trap '' TERM; sleep 30 & echo $! > bg.pid; echo started; sleep 30",
        cwd=tmp_path,
        timeout=0.5,
        output_limit=1000,
    )
    elapsed = time.monotonic() - start
    assert result.timed_out and result.exit_code is None
    assert result.output == "started\n"
    assert elapsed < 3
    bg = int((tmp_path / "bg.pid").read_text())
    await asyncio.sleep(0.1)
    assert not alive(bg)


async def test_background_child_holding_pipe_does_not_hang(
    kaos: LocalKaos, tmp_path: Path, alive: Callable[[int], bool]
) -> None:
    start = time.monotonic()
    result = await kaos.run_command(
        "sleep 30 & echo $! > bg.pid; echo done", cwd=tmp_path, timeout=20, output_limit=1000
    )
    assert time.monotonic() - start < 2
    assert result.exit_code == 0 and result.output == "done\n"
    bg = int((tmp_path / "bg.pid").read_text())
    await asyncio.sleep(0.1)
    assert not alive(bg)


async def test_cancel_kills_group_quickly(
    kaos: LocalKaos, tmp_path: Path, alive: Callable[[int], bool]
) -> None:
    task = asyncio.create_task(
        kaos.run_command(
            "sleep 30 & echo $! > bg.pid; echo $$ > sh.pid; sleep 30",
            cwd=tmp_path,
            timeout=50,
            output_limit=1000,
        )
    )
    for _ in range(100):
        await asyncio.sleep(0.02)
        if (tmp_path / "sh.pid").exists() and (tmp_path / "sh.pid").read_text().strip():
            break
    pids = [int((tmp_path / name).read_text()) for name in ("bg.pid", "sh.pid")]
    assert all(alive(pid) for pid in pids)
    start = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - start < 1
    await asyncio.sleep(0.1)
    assert not any(alive(pid) for pid in pids)


async def test_missing_cwd_raises(kaos: LocalKaos, tmp_path: Path) -> None:
    with pytest.raises(OSError):
        await kaos.run_command("true", cwd=tmp_path / "missing", timeout=5, output_limit=10)
