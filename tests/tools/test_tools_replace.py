from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kimi_acp.tools.base import ToolRejectedError
from kimi_acp.tools.replace import StrReplaceFile
from kimi_acp.wire.types import DiffDisplayBlock

if TYPE_CHECKING:
    from .conftest import Call, FakeApprover


@pytest.fixture
def source(work_dir: Path) -> Path:
    path = work_dir / "src.py"
    path.write_text("a = 1\nb = 2\na = 1\nc = 3\n")
    return path


async def test_single_edit(call: Call, source: Path, approver: FakeApprover) -> None:
    result = await call(StrReplaceFile(), path="src.py", edit={"old": "b = 2", "new": "b = 20"})
    assert not result.is_error
    assert source.read_text() == "a = 1\nb = 20\na = 1\nc = 3\n"
    assert result.message == "File successfully edited. Applied 1 edit(s) with 1 total replacement(s)."
    (req,) = approver.requests
    assert req.action == "edit file"
    assert req.description == f"Edit file `{source}`"
    assert (
        req.display
        == result.display
        == [
            DiffDisplayBlock(
                path=str(source),
                old_text="a = 1\nb = 2\na = 1\nc = 3\n",
                new_text="a = 1\nb = 20\na = 1\nc = 3\n",
                old_start=1,
                new_start=1,
            )
        ]
    )


async def test_list_of_edits_in_order(call: Call, source: Path) -> None:
    result = await call(
        StrReplaceFile(),
        path=str(source),
        edit=[{"old": "c = 3", "new": "c = 30"}, {"old": "c = 30", "new": "c = 300"}],
    )
    assert source.read_text() == "a = 1\nb = 2\na = 1\nc = 300\n"
    assert result.message == "File successfully edited. Applied 2 edit(s) with 2 total replacement(s)."


async def test_replace_all(call: Call, source: Path) -> None:
    result = await call(
        StrReplaceFile(), path="src.py", edit={"old": "a = 1", "new": "a = 9", "replace_all": True}
    )
    assert source.read_text() == "a = 9\nb = 2\na = 9\nc = 3\n"
    assert result.message == "File successfully edited. Applied 1 edit(s) with 2 total replacement(s)."


async def test_multiple_occurrences_replace_first_only(call: Call, source: Path) -> None:
    result = await call(StrReplaceFile(), path="src.py", edit={"old": "a = 1", "new": "a = 9"})
    assert source.read_text() == "a = 9\nb = 2\na = 1\nc = 3\n"
    assert result.message.startswith(
        "File successfully edited. Applied 1 edit(s) with 1 total replacement(s)."
    )
    assert "occurs 2 times" in result.message


async def test_not_found(call: Call, source: Path, approver: FakeApprover) -> None:
    result = await call(StrReplaceFile(), path="src.py", edit={"old": "zzz", "new": "y"})
    assert result.is_error
    assert result.message == "No replacements were made. The old string was not found in the file."
    assert approver.requests == []


async def test_partial_failure_changes_nothing(call: Call, source: Path, approver: FakeApprover) -> None:
    before = source.read_text()
    result = await call(
        StrReplaceFile(),
        path="src.py",
        edit=[
            {"old": "b = 2", "new": "b = 3"},
            {"old": "missing", "new": "x"},
            {"old": "c = 3", "new": "c = 4"},
        ],
    )
    assert result.is_error
    assert "edit 2 (of 3" in result.message and "not changed" in result.message
    assert source.read_text() == before
    assert approver.requests == []


async def test_empty_old_and_missing_file(call: Call, source: Path, work_dir: Path) -> None:
    result = await call(StrReplaceFile(), path="src.py", edit={"old": "", "new": "x"})
    assert result.is_error and "must not be empty" in result.message
    result = await call(StrReplaceFile(), path="gone.py", edit={"old": "a", "new": "b"})
    assert result.is_error and result.message == f"`{work_dir / 'gone.py'}` does not exist."
    result = await call(StrReplaceFile(), path="src.py", edit=[])
    assert result.is_error and "No edits" in result.message


async def test_outside_workspace_and_rejection(call: Call, work_dir: Path, approver: FakeApprover) -> None:
    target = work_dir.parent / "other.txt"
    target.write_text("old\n")
    approver.reject = True
    with pytest.raises(ToolRejectedError):
        await call(StrReplaceFile(), path=str(target), edit={"old": "old", "new": "new"})
    assert approver.requests[0].action == "edit file outside of working directory"
    assert target.read_text() == "old\n"


async def test_crlf_file_keeps_line_endings(call: Call, work_dir: Path) -> None:
    path = work_dir / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\n")
    await call(StrReplaceFile(), path="win.txt", edit={"old": "two", "new": "2"})
    assert path.read_bytes() == b"one\r\n2\r\n"
