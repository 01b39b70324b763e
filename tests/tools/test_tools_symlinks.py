"""Inside or outside the workspace is decided on real paths: symlinks are followed on both sides."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kimi_acp.tools.base import ToolContext, ToolRejectedError
from kimi_acp.tools.read import ReadFile
from kimi_acp.tools.replace import StrReplaceFile
from kimi_acp.tools.write import WriteFile
from kimi_acp.wire.actions import EDIT_ACTION, EDIT_OUTSIDE_ACTION

if TYPE_CHECKING:
    from .conftest import Call, FakeApprover


@pytest.fixture
def outside(tmp_path: Path, work_dir: Path) -> Path:
    """`outside/` next to the project, with `link-dir` -> it and `link-file` -> its `target.txt`."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "target.txt").write_text("secret = 1\n")
    (work_dir / "link-dir").symlink_to(directory, target_is_directory=True)
    (work_dir / "link-file").symlink_to(directory / "target.txt")
    return directory


async def test_new_file_under_symlinked_dir_is_outside(
    call: Call, work_dir: Path, outside: Path, approver: FakeApprover
) -> None:
    path = work_dir / "link-dir" / "new.txt"
    await call(WriteFile(), path=str(path), content="x")
    (req,) = approver.requests
    assert req.action == EDIT_OUTSIDE_ACTION
    real = outside.resolve() / "new.txt"
    assert req.description == f"Write file `{path}` (through a symbolic link: `{real}`)"
    assert (outside / "new.txt").read_text() == "x"  # approved: it is written where the link leads


async def test_symlinked_file_is_outside_for_write_and_replace(
    call: Call, work_dir: Path, outside: Path, approver: FakeApprover
) -> None:
    link = str(work_dir / "link-file")
    await call(WriteFile(), path=link, content="more\n", mode="append")
    await call(StrReplaceFile(), path=link, edit={"old": "1", "new": "2"})
    assert [r.action for r in approver.requests] == [EDIT_OUTSIDE_ACTION, EDIT_OUTSIDE_ACTION]
    assert approver.requests[1].description.startswith(f"Edit file `{link}` (through a symbolic link: ")
    assert (outside / "target.txt").read_text() == "secret = 2\nmore\n"


async def test_rejected_outside_edits_leave_the_target_alone(
    call: Call, work_dir: Path, outside: Path, approver: FakeApprover
) -> None:
    approver.reject = True
    with pytest.raises(ToolRejectedError):
        await call(WriteFile(), path=str(work_dir / "link-file"), content="gone")
    with pytest.raises(ToolRejectedError):
        await call(StrReplaceFile(), path=str(work_dir / "link-file"), edit={"old": "1", "new": "2"})
    with pytest.raises(ToolRejectedError):
        await call(WriteFile(), path=str(work_dir / "link-dir" / "new.txt"), content="x")
    assert (outside / "target.txt").read_text() == "secret = 1\n"
    assert sorted(p.name for p in outside.iterdir()) == ["target.txt"]


async def test_dangling_link_to_outside_is_outside(
    call: Call, work_dir: Path, outside: Path, approver: FakeApprover
) -> None:
    (work_dir / "dangling").symlink_to(outside / "not-yet.txt")
    await call(WriteFile(), path=str(work_dir / "dangling"), content="x")
    assert approver.requests[0].action == EDIT_OUTSIDE_ACTION
    assert (outside / "not-yet.txt").read_text() == "x"


@pytest.mark.parametrize("rel", ["link-dir/new.txt", "link-file", "link-dir/../link-file"])
async def test_relative_path_through_a_link_out_is_refused(
    call: Call, work_dir: Path, outside: Path, approver: FakeApprover, rel: str
) -> None:
    result = await call(WriteFile(), path=rel, content="x")
    assert result.is_error and "a symbolic link to" in result.message
    assert "Use an absolute path" in result.message
    result = await call(StrReplaceFile(), path=rel, edit={"old": "1", "new": "2"})
    assert result.is_error and "Use an absolute path" in result.message
    assert approver.requests == []
    assert (outside / "target.txt").read_text() == "secret = 1\n"
    assert sorted(p.name for p in outside.iterdir()) == ["target.txt"]


async def test_read_relative_through_link_refused_absolute_allowed(
    call: Call, work_dir: Path, outside: Path
) -> None:
    result = await call(ReadFile(), path="link-dir/target.txt")
    assert result.is_error
    assert result.message == (
        f"`link-dir/target.txt` resolves to `{work_dir / 'link-dir' / 'target.txt'}`, a symbolic link to "
        f"`{outside.resolve() / 'target.txt'}`, which is outside the working directory `{work_dir}`. "
        "Use an absolute path for files outside the working directory."
    )
    result = await call(ReadFile(), path=str(work_dir / "link-file"))
    assert not result.is_error and result.output == "     1\tsecret = 1\n"


async def test_dotdot_after_a_link_is_resolved_like_the_write(
    call: Call, work_dir: Path, outside: Path, approver: FakeApprover
) -> None:
    """`link-dir/../x` is normalised to the project's `x` before both the check and the write."""
    await call(WriteFile(), path=str(work_dir / "link-dir" / ".." / "x.txt"), content="x")
    assert approver.requests[0].action == EDIT_ACTION
    assert (work_dir / "x.txt").read_text() == "x"
    assert not (outside.parent / "x.txt").exists()


async def test_link_staying_inside_is_inside(call: Call, work_dir: Path, approver: FakeApprover) -> None:
    (work_dir / "src").mkdir()
    (work_dir / "alias").symlink_to(work_dir / "src", target_is_directory=True)
    await call(WriteFile(), path="alias/a.txt", content="x")
    assert approver.requests[0].action == EDIT_ACTION
    assert approver.requests[0].description == f"Write file `{work_dir / 'alias' / 'a.txt'}`"
    assert (work_dir / "src" / "a.txt").read_text() == "x"


async def test_work_dir_and_additional_dirs_compared_by_real_path(
    ctx: ToolContext, tmp_path: Path, work_dir: Path, approver: FakeApprover
) -> None:
    """A project opened through a symlink, and an additional dir given as a link, are still the workspace."""
    (tmp_path / "project-link").symlink_to(work_dir, target_is_directory=True)
    extra = tmp_path / "extra"
    extra.mkdir()
    (tmp_path / "extra-link").symlink_to(extra, target_is_directory=True)
    ctx.work_dir = tmp_path / "project-link"
    ctx.additional_dirs = [tmp_path / "extra-link"]
    tool = WriteFile()
    paths = [work_dir / "a.txt", ctx.work_dir / "b.txt", extra / "c.txt", tmp_path / "extra-link" / "d.txt"]
    for path in paths:
        await tool.run(tool.params.model_validate({"path": str(path), "content": "x"}), ctx)
    assert [r.action for r in approver.requests] == [EDIT_ACTION] * 4
    assert not ctx.in_workspace(tmp_path / "elsewhere.txt")
