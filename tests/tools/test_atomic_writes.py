"""WriteFile and StrReplaceFile replace the file whole (kaos/local.py, util/fs.replace_file):
hard links break, symlinks are followed, mode and owner are kept, a failure changes nothing."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kimi_acp.kaos.local import LocalKaos
from kimi_acp.tools.replace import StrReplaceFile
from kimi_acp.tools.write import WriteFile
from kimi_acp.util.regular_file import NotRegularFileError

if TYPE_CHECKING:
    from .conftest import Call


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_a_hard_link_into_the_project_changes_only_the_inside_name(call: Call, work_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside content\n")
    inside = work_dir / "inside.txt"
    os.link(outside, inside)
    result = await call(WriteFile(), path="inside.txt", content="written inside\n")
    assert not result.is_error
    assert inside.read_text() == "written inside\n"
    assert outside.read_text() == "outside content\n"
    assert inside.stat().st_nlink == 1 and outside.stat().st_nlink == 1
    result = await call(StrReplaceFile(), path="inside.txt", edit={"old": "inside", "new": "in here"})
    assert not result.is_error and inside.read_text() == "written in here\n"
    result = await call(WriteFile(), path="inside.txt", content="more\n", mode="append")
    assert not result.is_error and inside.read_text() == "written in here\nmore\n"
    assert outside.read_text() == "outside content\n"


async def test_a_symlinked_file_is_replaced_at_its_target_and_stays_a_link(work_dir: Path) -> None:
    real = work_dir / "real.txt"
    real.write_text("old\n")
    link = work_dir / "link.txt"
    link.symlink_to("real.txt")
    size = await LocalKaos().write_text(link, "new\n")
    assert size == 4
    assert link.is_symlink() and os.readlink(link) == "real.txt"
    assert real.read_text() == "new\n"
    assert sorted(p.name for p in work_dir.iterdir()) == ["link.txt", "real.txt"]


async def test_the_mode_is_kept_and_a_new_file_gets_the_umask_mode(work_dir: Path) -> None:
    script = work_dir / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o750)
    await LocalKaos().write_text(script, "echo new\n")
    assert mode_of(script) == 0o750 and script.read_text() == "echo new\n"
    await LocalKaos().write_text(script, "echo more\n", append=True)
    assert mode_of(script) == 0o750 and script.read_text() == "echo new\necho more\n"
    umask = os.umask(0o027)
    try:
        await LocalKaos().write_text(work_dir / "fresh.txt", "x")
    finally:
        os.umask(umask)
    assert mode_of(work_dir / "fresh.txt") == 0o640


async def test_owner_and_group_are_kept_when_root_rewrites_another_users_file(work_dir: Path, unavailable) -> None:
    if os.geteuid() != 0:
        unavailable("giving a file to another user needs root")
    path = work_dir / "theirs.txt"
    path.write_text("old\n")
    os.chown(path, 65534, 65534)
    await LocalKaos().write_text(path, "new\n")
    st = path.stat()
    assert (st.st_uid, st.st_gid) == (65534, 65534) and path.read_text() == "new\n"


async def test_a_failed_write_leaves_the_file_and_no_temp(work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = work_dir / "keep.txt"
    path.write_text("precious\n")

    def no_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", no_fsync)
    with pytest.raises(OSError):
        await LocalKaos().write_text(path, "lost\n")
    assert path.read_text() == "precious\n"
    assert [p.name for p in work_dir.iterdir()] == ["keep.txt"]


async def test_a_fifo_is_refused_not_written_nor_replaced(work_dir: Path) -> None:
    """Writing a FIFO could wait forever for a reader (issue #30); replacing it is not what was asked."""
    fifo = work_dir / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFileError, match="FIFO"):
        await asyncio.wait_for(LocalKaos().write_text(fifo, "through the pipe"), 10)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
